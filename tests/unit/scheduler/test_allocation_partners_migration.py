"""Migration 0007: each allocation's one partner becomes its list of partners, and back."""
import pytest
from django.utils import timezone

from tests.unit.migrating import migrate_to, migrate_to_newest

BEFORE = ("scheduler", "0006_solver_fairness_weight")
AFTER = ("scheduler", "0007_allocation_partners")


@pytest.mark.django_db(transaction=True)
def test_the_partner_is_copied_into_partners_and_back():
    old = migrate_to(BEFORE)
    Job, Allocation = old.get_model("scheduler", "Job"), old.get_model("scheduler", "Allocation")
    Tenant, User = old.get_model("scheduler", "Tenant"), old.get_model("auth", "User")
    Workload, Node = old.get_model("catalog", "Workload"), old.get_model("telemetry", "Node")
    Gpu, GpuType = old.get_model("telemetry", "Gpu"), old.get_model("catalog", "GpuType")
    owner, tenant = User.objects.create(username="u"), Tenant.objects.create(name="t", slug="t")
    workload = Workload.objects.create(name="w")
    gpu_type = GpuType.objects.create(name="v100", memory_gb=16, idle_w=35, tdp_w=300)
    gpu = Gpu.objects.create(node=Node.objects.create(hostname="n"), index=0, uuid="GPU-0", gpu_type=gpu_type)
    a, b, c = (Job.objects.create(owner=owner, tenant=tenant, workload=workload, min_throughput=1, max_gpus=1,
                                  state="running") for _ in range(3))
    now = timezone.now()
    shared = Allocation.objects.create(job=a, gpu=gpu, partner=b, start=now)
    alone = Allocation.objects.create(job=c, gpu=gpu, start=now)

    new = migrate_to(AFTER)
    Allocation = new.get_model("scheduler", "Allocation")
    assert list(Allocation.objects.get(pk=shared.pk).partners.values_list("pk", flat=True)) == [b.pk]
    assert not Allocation.objects.get(pk=alone.pk).partners.exists()
    Allocation.objects.get(pk=alone.pk).partners.set([b.pk, a.pk])  # a group: only the schema after holds it

    old = migrate_to(BEFORE)
    Allocation = old.get_model("scheduler", "Allocation")
    assert Allocation.objects.get(pk=shared.pk).partner_id == b.pk
    assert Allocation.objects.get(pk=alone.pk).partner_id == a.pk  # the smallest id of the group's
    migrate_to_newest()  # as the other tests expect
