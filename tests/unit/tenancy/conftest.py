"""Two tenants on a cluster of 4 V100 and 2 K80 (tests/unit/scheduler/conftest.py's), with
their quotas, usage and energy written directly, as the accounting would; a GPU type, p100,
known to the catalog that the cluster has no GPU of."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import GpuType
from scheduler.models import Allocation, Job, Tenant, TenantEnergyDay, TenantQuota, TenantUsage
from tests.unit.scheduler.conftest import cluster, root, submit  # noqa: F401 -- the fixtures, shared


@pytest.fixture
def p100(db):
    return GpuType.objects.create(name="p100", memory_gb=16, tdp_w=250, idle_w=30, power_curve=[[0, 30], [1, 250]])


@pytest.fixture
def research(alice):
    return Tenant.objects.get(slug="research")


@pytest.fixture
def vision(bob):
    return Tenant.objects.get(slug="vision")


@pytest.fixture
def hold(resnet50):
    """hold(tenant, gpus, state='running', owner) -> a job of the tenant holding those GPUs now."""

    def make(tenant, gpus, owner, state="running"):
        job = Job.objects.create(workload=resnet50, tenant=tenant, owner=owner, min_throughput=1.0,
                                 max_gpus=len(gpus), state=state,
                                 pending_reason="waiting" if state == "pending" else "")
        for gpu in gpus:
            Allocation.objects.create(job=job, gpu=gpu, start=timezone.now())
        return job

    return make


@pytest.fixture
def accounted(research, vision, v100, k80):
    """Quotas (research 2 V100, vision 2 V100 + 1 K80), research's usage, and energy today
    (research 2 kWh, vision 5 kWh) and 40 days ago (research 7 kWh: another month)."""
    TenantQuota.objects.create(tenant=research, gpu_type=v100, gpus=2)
    TenantQuota.objects.create(tenant=vision, gpu_type=v100, gpus=2)
    TenantQuota.objects.create(tenant=vision, gpu_type=k80, gpus=1)
    TenantUsage.objects.create(tenant=research, gpu_hours=40.0, energy_kwh=9.0, factor=0.25, updated_at=timezone.now())
    today = timezone.now().date()
    TenantEnergyDay.objects.create(tenant=research, day=today, energy_kwh=2.0, gpu_hours=8.0)
    TenantEnergyDay.objects.create(tenant=research, day=today - timedelta(days=40), energy_kwh=7.0, gpu_hours=20.0)
    TenantEnergyDay.objects.create(tenant=vision, day=today, energy_kwh=5.0, gpu_hours=10.0)
