"""Two accounting passes at once (two workers, or a pass that outlived its interval) count each
allocation once: the second waits on the first's locks and then starts from where it stopped."""
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from scheduler.accounting import services
from scheduler.models import Allocation, Job, Membership, SolverConfig, Tenant, TenantEnergyDay, TenantUsage
from telemetry.models import Gpu, GpuSample, Node

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def allocation(transactional_db, django_user_model, v100, resnet50):
    node = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    gpu = Gpu.objects.create(node=node, index=0, uuid="GPU-v0", gpu_type=v100)
    tenant = Tenant.objects.create(slug="research", name="Research")
    TenantUsage.objects.create(tenant=tenant, updated_at=T0)  # as after any earlier pass: the rows exist
    SolverConfig.load()
    user = django_user_model.objects.create_user("alice", password="pw")
    Membership.objects.create(user=user, tenant=tenant)
    job = Job.objects.create(owner=user, tenant=tenant, workload=resnet50, min_throughput=1, max_gpus=1,
                             state="running")
    GpuSample.objects.bulk_create(GpuSample(gpu=gpu, ts=T0 + timedelta(seconds=s), power_w=100.0) for s in range(600))
    return Allocation.objects.create(job=job, gpu=gpu, start=T0, end=T0 + timedelta(seconds=600))


def waiting_on_a_lock() -> bool:
    """Another session of this database waits for a lock (PostgreSQL; SQLite cannot tell: a
    writer there waits inside its BEGIN, and the test then only shows the passes in turn)."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def test_two_passes_at_once_count_once(allocation, monkeypatch):
    locked, go = threading.Event(), threading.Event()
    real = services._count

    def held_by_the_first(windows, *args):
        """The first pass stops after reading what to count, until the second waits."""
        if threading.current_thread().name == "first":
            locked.set()
            go.wait(60)
        return real(windows, *args)

    monkeypatch.setattr(services, "_count", held_by_the_first)
    results = {}

    def run(name):
        try:
            results[name] = services.accounting_pass(now=T0 + timedelta(hours=1), settle_s=0).allocations
        finally:
            connections.close_all()

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    assert locked.wait(60)
    second = threading.Thread(target=run, args=("second",), name="second")
    second.start()
    deadline = time.monotonic() + 30
    while not waiting_on_a_lock() and time.monotonic() < deadline:
        time.sleep(0.05)
    go.set()
    first.join(60)
    second.join(60)
    assert results == {"first": 1, "second": 0}
    assert Job.objects.get(pk=allocation.job_id).energy_kwh == pytest.approx(60_000 / 3.6e6)
    assert TenantEnergyDay.objects.get().energy_kwh == pytest.approx(60_000 / 3.6e6)
    assert TenantUsage.objects.count() == 1
