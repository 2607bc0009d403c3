"""What the rounds read of jobs' past restarts: the restart overhead per workload (measured,
else the catalog's default) and how often each job was preempted in the last hour."""
from datetime import timedelta

from django.utils import timezone

from scheduler.models import InterruptionKind, Job, JobInterruption
from scheduler.selectors import RESTART_OVERHEAD_SAMPLES, preemptions_last_hour, restart_overheads


def make_job(owner, workload):
    return Job.objects.create(owner=owner, tenant=owner.membership.tenant, workload=workload, min_throughput=1.0,
                              max_gpus=1, pending_reason="Waiting for the next scheduling round.")


def interrupt(job, *, kind=InterruptionKind.MOVED, ago_s=0.0, overhead_s=None):
    return JobInterruption.objects.create(job=job, kind=kind, reason="test", was_running=True, overhead_s=overhead_s,
                                          at=timezone.now() - timedelta(seconds=ago_s))


def test_restart_overhead_is_the_median_of_the_latest_measured_restarts_else_the_catalogs(alice, resnet50, lm):
    lm.restart_overhead_s = 45.0
    lm.save()
    job = make_job(alice, resnet50)
    for n in range(RESTART_OVERHEAD_SAMPLES):  # the latest ones: 10 s each
        interrupt(job, ago_s=n, overhead_s=10.0)
    for n in range(5):  # older, slower: out of the window
        interrupt(job, ago_s=1000 + n, overhead_s=500.0)
    interrupt(job, ago_s=0.5)  # not measured: not counted
    interrupt(make_job(alice, lm), ago_s=1)  # lm: nothing measured

    overheads = restart_overheads([resnet50.name, lm.name, "no such workload"])

    assert overheads == {resnet50.name: 10.0, lm.name: 45.0}


def test_restart_overhead_median_of_a_few(alice, resnet50):
    job = make_job(alice, resnet50)
    for seconds in (4.0, 9.0, 30.0):
        interrupt(job, overhead_s=seconds)
    assert restart_overheads([resnet50.name]) == {resnet50.name: 9.0}


def test_preemptions_in_the_last_hour_count_preemptions_only(alice, resnet50):
    busy, calm = make_job(alice, resnet50), make_job(alice, resnet50)
    interrupt(busy, kind=InterruptionKind.PREEMPTED, ago_s=60)
    interrupt(busy, kind=InterruptionKind.PREEMPTED, ago_s=3500)
    interrupt(busy, kind=InterruptionKind.PREEMPTED, ago_s=3700)  # over an hour ago
    interrupt(busy, kind=InterruptionKind.MOVED, ago_s=60)  # a move is no preemption
    interrupt(calm, kind=InterruptionKind.NODE_DOWN, ago_s=60)
    assert preemptions_last_hour([busy.pk, calm.pk]) == {busy.pk: 2, calm.pk: 0}
