"""What the console and /metrics show of profiling: per GPU type profiled, profiling (k of n
cases), measured or datasheet only, live; campaigns by state; the types profiled."""
import pytest
from django.utils import timezone

from catalog.models import GpuType, Measurement
from gogh_web.events.models import Event
from scheduler.models import ProfilingCampaign
from scheduler.profiling.live import gpu_type_profiles_snapshot
from scheduler.profiling.services import campaign_start
from tests.unit.scheduler.test_restart_metrics import scrape

pytestmark = pytest.mark.django_db(transaction=True)  # events are written once the change commits


def test_each_type_says_how_the_catalog_knows_it(fake_suite, catalog, v100_node, v100, k80, resnet50):
    h100 = GpuType.objects.create(name="h100", memory_gb=80, tdp_w=700, idle_w=70, profiled_at=timezone.now(),
                                  profiled_suite_version="1", profiled_driver_version="580.159.04")
    Measurement.objects.create(workload=resnet50, gpu_type=k80, throughput=2.0, source="reference",
                               observed_at=timezone.now())
    campaign = campaign_start(gpu_type=v100, trigger="admin")
    profiles = gpu_type_profiles_snapshot(None)
    assert {name: p["status"] for name, p in profiles.items()} == {
        "v100": "profiling", "k80": "measured", "h100": "profiled"}
    assert (profiles["v100"]["cases"], profiles["v100"]["cases_settled"], profiles["v100"]["campaign_id"]) == (
        6, 1, campaign.pk)  # the case whose workload the catalog lacks is settled (failed) at once
    assert profiles["h100"]["driver_version"] == "580.159.04" and profiles["h100"]["cases"] is None
    Measurement.objects.all().delete()
    assert gpu_type_profiles_snapshot(None)["k80"]["status"] == "datasheet"
    assert h100.name in gpu_type_profiles_snapshot(None)


def test_a_campaign_that_moves_sends_an_event_of_its_type(fake_suite, catalog, v100_node, v100):
    campaign_start(gpu_type=v100, trigger="admin")
    event = Event.objects.filter(kind="gpu_type_profile").latest("id")
    assert event.key == "v100" and event.data["status"] == "profiling" and event.tenant_id is None


def test_metrics_count_campaigns_by_state_and_types_profiled(fake_suite, catalog, v100_node, v100, k80, client_for,
                                                            staff):
    campaign_start(gpu_type=v100, trigger="admin")
    ProfilingCampaign.objects.create(gpu_type=k80, trigger="admin", suite_version="1", state="done")
    GpuType.objects.filter(name="k80").update(profiled_at=timezone.now())
    _, metrics = scrape(client_for(staff))
    assert {state: metrics[("gogh_profiling_campaigns", (("state", state),))]
            for state in ("pending", "running", "done", "failed", "cancelled")} == {
        "pending": 1, "running": 0, "done": 1, "failed": 0, "cancelled": 0}
    assert metrics[("gogh_gpu_type_profiled", (("gpu_type", "k80"),))] == 1
    assert metrics[("gogh_gpu_type_profiled", (("gpu_type", "v100"),))] == 0


def test_the_cluster_page_says_it_per_gpu_type_and_hands_its_script_the_profiles(
        fake_suite, catalog, v100_node, v100, alice, client):
    campaign_start(gpu_type=v100, trigger="admin")
    client.force_login(alice)
    response = client.get("/dashboard/")
    assert response.status_code == 200
    assert response.context["gpu_type_rows"] == [
        {"gpu_type": "v100", "states": {"healthy": 2}, "profile": "profiling 1 of 6 cases", "held": 0}]
    assert b'<td class="profile">profiling 1 of 6 cases</td>' in response.content
    assert b'"profiles": {"v100": {"gpu_type": "v100", "status": "profiling"' in response.content
