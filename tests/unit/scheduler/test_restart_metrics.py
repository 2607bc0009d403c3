"""/metrics: restarts and the steps they lost per workload, interruptions per kind, and the
measured restart overhead, read from the jobs' counters and the interruptions at scrape time."""
import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from scheduler.models import InterruptionKind, Job, JobInterruption
from scheduler.services import job_submit


def scrape(client):
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    families = list(text_string_to_metric_families(response.content.decode()))
    samples = [sample for family in families for sample in family.samples]
    types = {family.name: family.type for family in families}
    return types, {(sample.name, tuple(sorted(sample.labels.items()))): sample.value for sample in samples}


def test_restarts_and_steps_lost_per_workload_and_interruptions_per_kind(client_for, staff, alice, resnet50, lm):
    def job(workload, restarts, lost):
        made = job_submit(owner=alice, workload=workload, min_throughput=1, max_gpus=1).job
        Job.objects.filter(pk=made.pk).update(restarts=restarts, steps_lost=lost)
        return made

    first = job(resnet50, 2, 340)
    job(resnet50, 1, 60)
    job(lm, 0, 0)
    for kind, overhead in (("moved", 12.5), ("moved", None), ("preempted", 7.5), ("node_down", None)):
        JobInterruption.objects.create(job=first, kind=kind, reason=kind, at=timezone.now(), was_running=True,
                                       overhead_s=overhead)

    types, metrics = scrape(client_for(staff))

    assert types["gogh_job_restarts"] == types["gogh_job_steps_lost"] == types["gogh_job_interruptions"] == "counter"
    assert metrics[("gogh_job_restarts_total", (("workload", resnet50.name),))] == 3
    assert metrics[("gogh_job_steps_lost_total", (("workload", resnet50.name),))] == 400
    assert metrics[("gogh_job_restarts_total", (("workload", lm.name),))] == 0  # a workload with jobs is listed
    interruptions = {kind.value: metrics[("gogh_job_interruptions_total", (("kind", kind.value),))]
                     for kind in InterruptionKind}
    assert interruptions == {"moved": 2, "preempted": 1, "node_down": 1, "gpu_failed": 0, "stopped": 0}
    assert metrics[("gogh_job_restart_overhead_seconds_count", ())] == 2  # measured ones only
    assert metrics[("gogh_job_restart_overhead_seconds_sum", ())] == pytest.approx(20.0)


def test_without_jobs_every_kind_is_zero_and_no_workload_is_listed(client_for, staff):
    _, metrics = scrape(client_for(staff))
    assert not any(name in ("gogh_job_restarts_total", "gogh_job_steps_lost_total") for name, _ in metrics)
    assert {labels: value for (name, labels), value in metrics.items() if name == "gogh_job_interruptions_total"} == {
        (("kind", kind.value),): 0 for kind in InterruptionKind
    }
    assert metrics[("gogh_job_restart_overhead_seconds_count", ())] == 0
