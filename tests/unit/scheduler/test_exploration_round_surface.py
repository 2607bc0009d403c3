"""What exploration shows outside the round: the jobs API's probe fields, /metrics (stranded jobs,
probes running and started, probes not counted below T_min), the Jobs page's probe marker, and
GOGH_EXPLORATION_* refused at start when out of range."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from catalog.models import Measurement
from gogh_web.env import exploration_environment
from scheduler import services
from scheduler.models import Allocation, Job, JobMeasurement
from tests.unit.scheduler.test_exploration_round import drifted as drifted  # a fixture, `as` marks it re-exported
from tests.unit.telemetry.test_downsample_and_metrics import scrape


@pytest.fixture
def probing(drifted, alice):
    """Two jobs asking 8/s of "Drifted": one probing on a V100 (budget: one probe), one stranded."""
    jobs = [services.job_submit(owner=alice, workload=drifted, min_throughput=8, max_gpus=1).job for _ in range(2)]
    services.scheduling_round_run(trigger="manual")
    return Job.objects.exclude(probe_gpu_type="").get(pk__in=[j.pk for j in jobs])


def test_the_jobs_api_shows_the_probe_read_only(probing, client_for, alice):
    body = client_for(alice).get(f"/api/jobs/{probing.pk}/").json()
    assert body["probe_gpu_type"] == "v100" and body["probes"] == 1 and body["probe_until"].endswith("Z")
    client_for(alice).patch(f"/api/jobs/{probing.pk}/", {"probes": 0}, format="json")
    probing.refresh_from_db()
    assert probing.probes == 1


def test_metrics_count_stranded_jobs_and_probes_and_no_probe_below_t_min(probing, client_for, staff):
    Job.objects.filter(pk=probing.pk).update(state="running")
    allocation = Allocation.objects.get(job=probing)
    seen = Measurement.objects.create(workload=probing.workload, gpu_type=allocation.gpu.gpu_type, throughput=5.0,
                                      source="telemetry", observed_at=timezone.now())
    JobMeasurement.objects.create(job=probing, measurement=seen)
    metrics = scrape(client_for(staff))
    assert metrics[("gogh_jobs_stranded", ())] == 1  # the other one; the probe is placed
    assert metrics[("gogh_probes_running", ())] == 1
    assert metrics[("gogh_probes_total", ())] == 1
    assert metrics[("gogh_jobs_below_min_throughput", ())] == 0  # 5/s against 8/s, but a probe


def test_the_jobs_page_marks_the_probe(probing, client, alice):
    client.force_login(alice)
    page = client.get("/dashboard/jobs/").content.decode()
    assert 'class="badge probe" role="img" title="Probe 1 on v100 until ' in page


@pytest.mark.parametrize(("name", "value", "message"), [
    ("GOGH_EXPLORATION_ENABLED", "maybe", "'maybe' is neither on"),
    ("GOGH_EXPLORATION_PROBE_S", "0", "'0' is not at least 1 (seconds)"),
    ("GOGH_EXPLORATION_PROBE_S", "ten", "'ten' is not at least 1"),
    ("GOGH_EXPLORATION_MIN_CHANCE", "1.5", "'1.5' is not a probability from 0 to 1"),
    ("GOGH_EXPLORATION_MAX_PROBE_SHARE", "0", "'0' is not a fraction of the cluster's GPUs"),
    ("GOGH_EXPLORATION_RETRY_AFTER_S", "nan", "'nan' is not at least 0"),
    ("GOGH_EXPLORATION_MAX_PROBES_PER_JOB", "2.5", "'2.5' is not a whole number from 0"),
    ("GOGH_EXPLORATION_MAX_PROBES_PER_JOB", "-1", "'-1' is not a whole number"),
])
def test_bad_exploration_settings_stop_the_start(name, value, message):
    with pytest.raises(ImproperlyConfigured, match=re.escape(f"{name}: {message}")):
        exploration_environment({name: value})


def test_exploration_settings_defaults_and_values():
    assert exploration_environment({}) == {
        "enabled": True, "probe_s": 600.0, "min_chance": 0.05, "max_probe_share": 0.1, "retry_after_s": 3600.0,
        "max_probes_per_job": 3,
    }
    given = exploration_environment({"GOGH_EXPLORATION_ENABLED": "off", "GOGH_EXPLORATION_PROBE_S": "120",
                                     "GOGH_EXPLORATION_MAX_PROBES_PER_JOB": "0"})
    assert (given["enabled"], given["probe_s"], given["max_probes_per_job"]) == (False, 120.0, 0)
