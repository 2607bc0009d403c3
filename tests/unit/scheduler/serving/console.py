"""Fixtures of the console's tests of services (page, live kind, /metrics, admin): rows written
directly, as the rounds and the replicas' reports would write them. Imported by name."""
import pytest
from django.utils import timezone

from scheduler.models import Allocation, Job, Service


def make_job(owner, workload, *, service=None, state="pending"):
    now = timezone.now()
    return Job.objects.create(
        owner=owner, tenant=owner.membership.tenant, workload=workload, min_throughput=1, max_gpus=1, service=service,
        state=state, pending_reason="waiting" if state == "pending" else "",
        placed_at=None if state == "pending" else now, started_at=now if state == "running" else None,
    )


def share(gpu, *jobs):
    """Open allocations of `jobs` on one GPU, each listing the others as its partners."""
    allocations = [Allocation.objects.create(job=job, gpu=gpu, start=timezone.now()) for job in jobs]
    for allocation in allocations:
        allocation.partners.set([job for job in jobs if job.pk != allocation.job_id])
    return allocations


@pytest.fixture
def ranker(alice, resnet50, lm, cluster):
    """research's service `ranker` (P99 <= 50 ms, 1-4 replicas of batch 8), planned for 2
    replicas: one running on the first V100 beside a training job of LM, one pending; its
    replicas report 120 requests/s in all and a P99 of 42 ms."""
    service = Service.objects.create(
        name="ranker", owner=alice, tenant=alice.membership.tenant, workload=resnet50, latency_bound_ms=50,
        min_replicas=1, max_replicas=4, batch_size=8, replicas_target=2, forecast_rps=150.0, calibration=1.25,
        replica_min_throughput=9.5, request_rate_rps=120.0, p99_ms=42.0, planned_at=timezone.now(),
    )
    running = make_job(alice, resnet50, service=service, state="running")
    make_job(alice, resnet50, service=service)
    training = make_job(alice, lm, state="running")
    share(cluster[0], running, training)
    return service


@pytest.fixture
def detector(bob, resnet50):
    """vision's service `detector` (P99 <= 20 ms), planned but with no replica yet."""
    return Service.objects.create(name="detector", owner=bob, tenant=bob.membership.tenant, workload=resnet50,
                                  latency_bound_ms=20, replicas_target=1, request_rate_rps=5.0, p99_ms=31.5)
