from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from scheduler.models import Allocation, Job, Tenant
from telemetry.models import Gpu, GpuSample, Node

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def gpus(v100):
    node = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    return [Gpu.objects.create(node=node, index=i, uuid=f"GPU-v{i}", gpu_type=v100) for i in range(2)]


@pytest.fixture
def make_job(make_user, resnet50):
    """make_job(tenant_slug) -> a running Job of that tenant (the tenant made if new)."""
    users = {}

    def make(tenant="research"):
        if tenant not in users:
            users[tenant] = make_user(f"u-{tenant}", tenant=tenant)
        return Job.objects.create(
            owner=users[tenant], tenant=Tenant.objects.get(slug=tenant), workload=resnet50,
            min_throughput=1.0, max_gpus=1, state="running",
        )

    return make


def allocate(job, gpu, start_s, end_s=None):
    """An allocation of `job` on `gpu` from T0 + start_s to T0 + end_s (None: open)."""
    return Allocation.objects.create(
        job=job, gpu=gpu, start=T0 + timedelta(seconds=start_s),
        end=None if end_s is None else T0 + timedelta(seconds=end_s),
    )


def samples(gpu, start_s, end_s, power_w, every_s=1):
    """One sample every `every_s` from T0 + start_s (included) to T0 + end_s (excluded)."""
    GpuSample.objects.bulk_create(
        GpuSample(gpu=gpu, ts=T0 + timedelta(seconds=s), power_w=power_w) for s in range(start_s, end_s, every_s)
    )


def at(seconds):
    return T0 + timedelta(seconds=seconds)
