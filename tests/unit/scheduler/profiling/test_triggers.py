"""What starts a profiling campaign: a node with a GPU type the catalog has no measurement of
(new_type), a node whose GPU driver differs from the one its type was profiled with
(driver_change), and what starts none."""
import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler.models import CampaignState, Job, ProfilingCampaign
from scheduler.profiling import services, suite
from telemetry.models import Node
from telemetry.services import node_heartbeat

from .conftest import CASES, MISSING, R50

pytestmark = pytest.mark.django_db


def register(client, hostname="new-node", gpu_type="v100", count=2, **fields):
    body = {"hostname": hostname, "gpus": [{"index": i, "uuid": f"GPU-{hostname}-{i}", "gpu_type": gpu_type}
                                            for i in range(count)], **fields}
    return client.post("/api/nodes/register/", body, format="json")


def test_a_node_of_a_type_without_measurements_starts_a_campaign_with_its_jobs(
        fake_suite, catalog, staff, client_for, v100):
    response = register(client_for(staff), driver_version="550.54.14")  # staff: approved at once
    assert response.status_code == 201, response.json()
    assert response.json()["driver_version"] == "550.54.14"
    campaign = ProfilingCampaign.objects.get()
    assert (campaign.gpu_type, campaign.trigger, campaign.state) == (v100, "new_type", "pending")
    assert campaign.suite_version == "1" and campaign.driver_version == "550.54.14"
    assert campaign.cases == [case.name for case in CASES]  # a 2-GPU node runs the 2-GPU cases too
    assert campaign.failures == [{"case": MISSING, "kind": "error", "message": "Its workload is not in the catalog."}]
    jobs = list(Job.objects.filter(campaign=campaign).order_by("pk"))
    assert [job.profiling_cases for job in jobs] == [
        [R50, "LM (batch size 20)", f"{R50} + LM (batch size 20)"], ["LM (batch size 20) x2", f"{R50} x2"],
    ]
    assert [job.max_gpus for job in jobs] == [1, 2]
    assert [job.total_steps for job in jobs] == [3, 2]
    first = jobs[0]
    assert first.owner.username == services.SYSTEM_USERNAME and first.tenant.slug == services.SYSTEM_TENANT_SLUG
    assert not first.owner.has_usable_password() and not first.owner.is_staff
    assert first.priority == services.CAMPAIGN_PRIORITY and first.state == "pending"
    assert first.workload.name == R50
    assert first.command == (
        "python -m catalog.profiling --cases 'ResNet-50 (batch size 64),LM (batch size 20),ResNet-50 (batch size 64)"
        " + LM (batch size 20)' --gpu-type v100 --emit-lines"
    )
    assert Node.objects.get(hostname="new-node").driver_version == "550.54.14"


def test_a_second_node_of_the_type_starts_no_second_campaign(fake_suite, catalog, staff, client_for, v100):
    register(client_for(staff), hostname="first")
    register(client_for(staff), hostname="second")
    assert ProfilingCampaign.objects.count() == 1


def test_a_measured_type_starts_none(fake_suite, catalog, staff, client_for, v100, resnet50):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.0, source="reference",
                               observed_at=timezone.now())
    register(client_for(staff))
    assert not ProfilingCampaign.objects.exists() and not Job.objects.exists()


def test_a_node_nobody_approved_starts_none(fake_suite, catalog, agent, client_for, v100):
    response = register(client_for(agent))
    assert response.status_code == 201 and response.json()["approved"] is False
    assert not ProfilingCampaign.objects.exists()


def test_without_the_suite_the_node_registers_and_nothing_starts(monkeypatch, catalog, staff, client_for, v100):
    def missing():
        raise ImportError("No module named 'catalog.profiling'")

    monkeypatch.setattr(suite, "suite_version", missing)
    assert register(client_for(staff)).status_code == 201
    assert not ProfilingCampaign.objects.exists()


def test_a_type_that_failed_its_campaign_is_not_profiled_again_by_itself(fake_suite, catalog, v100_node, agent, v100):
    ProfilingCampaign.objects.create(gpu_type=v100, trigger="new_type", suite_version="1", state=CampaignState.FAILED)
    node_heartbeat(node=v100_node, agent_user=agent)
    assert ProfilingCampaign.objects.count() == 1  # an admin may ask again (test_campaign_api)


def test_heartbeats_start_one_for_a_new_type_too(fake_suite, catalog, v100_node, agent):
    node_heartbeat(node=v100_node, agent_user=agent)
    node_heartbeat(node=v100_node, agent_user=agent)
    assert ProfilingCampaign.objects.get().trigger == "new_type"


def test_a_driver_change_profiles_the_type_again_once(fake_suite, catalog, v100_node, agent, client_for, v100,
                                                     resnet50):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.0, source="profiling",
                               observed_at=timezone.now())
    v100.profiled_at, v100.profiled_driver_version = timezone.now(), "550.54.14"
    v100.save()
    beat = f"/api/nodes/{v100_node.pk}/heartbeat/"
    assert client_for(agent).post(beat, {"driver_version": "550.54.14"}, format="json").status_code == 200
    assert not ProfilingCampaign.objects.exists()
    assert client_for(agent).post(beat, {"driver_version": "580.159.04"}, format="json").status_code == 200
    campaign = ProfilingCampaign.objects.get()
    assert (campaign.trigger, campaign.driver_version) == ("driver_change", "580.159.04")
    ProfilingCampaign.objects.filter(pk=campaign.pk).update(state=CampaignState.DONE)
    client_for(agent).post(beat, {"driver_version": "580.159.04"}, format="json")
    assert ProfilingCampaign.objects.count() == 1  # that driver was profiled: once per driver version
    assert Node.objects.get(pk=v100_node.pk).driver_version == "580.159.04"


def test_a_heartbeat_without_a_driver_keeps_the_one_reported(v100_node, agent, client_for):
    Node.objects.filter(pk=v100_node.pk).update(driver_version="550.54.14")
    answer = client_for(agent).post(f"/api/nodes/{v100_node.pk}/heartbeat/", {}, format="json")
    assert answer.status_code == 200
    assert Node.objects.get(pk=v100_node.pk).driver_version == "550.54.14"


def test_a_heartbeat_with_an_unknown_field_or_a_long_driver_is_refused(v100_node, agent, client_for):
    beat = f"/api/nodes/{v100_node.pk}/heartbeat/"
    assert client_for(agent).post(beat, {"driver": "1"}, format="json").json() == {"driver": ["Unknown field."]}
    answer = client_for(agent).post(beat, {"driver_version": "9" * 41}, format="json")
    assert answer.status_code == 400 and "driver_version" in answer.json()
    assert Node.objects.get(pk=v100_node.pk).driver_version == ""
