"""The problem built from the database carries the tenants' quotas (TenantQuota, by tenant slug
and GPU type name) and the tenants that may not borrow; a kept-in-place job's GPUs, left out of
the problem, still count against its tenant's quota; and a round holds a tenant that may not
borrow to its quota, telling its waiting jobs why."""
from django.utils import timezone

from scheduler import services
from scheduler.models import Allocation, Job, SolverConfig, Tenant, TenantQuota
from scheduler.optimizer.problem import QuotaSpec
from scheduler.problem_source import problem_from_database
from telemetry.models import Gpu


def submit(owner, workload):
    return services.job_submit(owner=owner, workload=workload, min_throughput=5.0, max_gpus=1).job


def test_quotas_and_tenants_that_may_not_borrow_fill_the_problem(measured, alice, bob, v100, k80):
    research, vision = Tenant.objects.get(slug="research"), Tenant.objects.get(slug="vision")
    TenantQuota.objects.create(tenant=research, gpu_type=v100, gpus=2)
    TenantQuota.objects.create(tenant=research, gpu_type=k80, gpus=1)
    TenantQuota.objects.create(tenant=vision, gpu_type=v100, gpus=1)
    Tenant.objects.filter(pk=vision.pk).update(may_borrow=False)

    problem = problem_from_database(SolverConfig.load())
    assert problem.quotas == (
        QuotaSpec("research", "k80", 1), QuotaSpec("research", "v100", 2), QuotaSpec("vision", "v100", 1),
    )
    assert problem.no_borrowing == frozenset({"vision"})


def test_without_quotas_the_problem_has_none(measured, alice):
    problem = problem_from_database(SolverConfig.load())
    assert problem.quotas == () and problem.no_borrowing == frozenset()


def test_a_kept_in_place_job_counts_against_its_tenants_quota(measured, alice, resnet50, v100):
    """A job on a GPU an outside run holds is left out of the problem with that GPU: research's
    quota of 3 V100 is offered as 2."""
    TenantQuota.objects.create(tenant=Tenant.objects.get(slug="research"), gpu_type=v100, gpus=3)
    job = submit(alice, resnet50)
    services.job_transition(job=job, to="placed")
    Allocation.objects.create(job=job, gpu=measured[0], start=timezone.now())
    Gpu.objects.filter(pk=measured[0].pk).update(external_holder="someone-else (Slurm job 12)")

    problem = problem_from_database(SolverConfig.load())
    assert str(job.pk) not in {spec.id for spec in problem.jobs}
    assert problem.quotas == (QuotaSpec("research", "v100", 2),)


def test_a_round_holds_a_tenant_that_may_not_borrow_to_its_quota(measured, alice, resnet50, v100):
    """Research (1 V100, may not borrow) submits three jobs that only V100 serves (T_min 5,
    K80 does 4/s); four V100 are free. One is placed, two wait for quota and say so."""
    research = Tenant.objects.get(slug="research")
    TenantQuota.objects.create(tenant=research, gpu_type=v100, gpus=1)
    Tenant.objects.filter(pk=research.pk).update(may_borrow=False)
    jobs = [submit(alice, resnet50) for _ in range(3)]

    services.scheduling_round_run(trigger="manual")
    states = sorted(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("state", "pending_reason"))
    assert states == [
        ("pending", "Waiting for quota: tenant research uses 1 of its 1 v100 quota and may not borrow."),
        ("pending", "Waiting for quota: tenant research uses 1 of its 1 v100 quota and may not borrow."),
        ("placed", ""),
    ]
    assert Allocation.objects.filter(end__isnull=True).count() == 1


def test_a_round_reclaims_the_owners_quota_from_a_higher_priority_borrower(measured, alice, bob, resnet50, v100):
    """Vision (no quota) fills the four V100 with priority-2 jobs that only V100 serves; research
    (quota 1 V100) then submits a priority-0 job: the next round places it and preempts one
    borrower, whatever the priorities (Kueue's reclaimWithinCohort: Any)."""
    TenantQuota.objects.create(tenant=Tenant.objects.get(slug="research"), gpu_type=v100, gpus=1)
    borrowers = [services.job_submit(owner=bob, workload=resnet50, min_throughput=5.0, max_gpus=1, priority=2).job
                 for _ in range(4)]
    services.scheduling_round_run(trigger="manual")
    assert Allocation.objects.filter(end__isnull=True).count() == 4
    owner = submit(alice, resnet50)

    services.scheduling_round_run(trigger="submit")
    owner.refresh_from_db()
    assert owner.state == "placed"
    assert owner.allocations.get(end__isnull=True).gpu.gpu_type == v100
    preempted = Job.objects.filter(pk__in=[j.pk for j in borrowers], state="pending")
    assert preempted.count() == 1 and "Preempted by solve" in preempted.get().pending_reason
    assert not preempted.get().allocations.filter(end__isnull=True).exists()
