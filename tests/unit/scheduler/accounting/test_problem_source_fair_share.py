"""The round's problem carries each job's tenant factor (TenantUsage.factor; 1.0 without a row)."""
from django.utils import timezone

from scheduler import services
from scheduler.models import SolverConfig, TenantUsage
from scheduler.problem_source import problem_from_database


def test_each_job_carries_its_tenants_factor(cluster, alice, bob, resnet50):
    ours = services.job_submit(owner=alice, workload=resnet50, min_throughput=8.0, max_gpus=1).job
    theirs = services.job_submit(owner=bob, workload=resnet50, min_throughput=8.0, max_gpus=1).job
    TenantUsage.objects.create(tenant=ours.tenant, gpu_hours=3.0, factor=0.25, updated_at=timezone.now())
    specs = {spec.id: spec for spec in problem_from_database(SolverConfig.load()).jobs}
    assert specs[str(ours.pk)].fair_share == 0.25
    assert specs[str(theirs.pk)].fair_share == 1.0
