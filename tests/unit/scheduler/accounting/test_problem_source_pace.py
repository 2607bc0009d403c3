"""The round's problem carries each job's pace (optimizer.finish_time), as simulate computes it:
the steps/s that bring its finish-time fairness to PACE_RHO, from its time since submission and
its steps left, against its time with 1/n of the cluster; and the jobs of a tenant holding less
than its entitlement (optimizer.entitlement) their fastest rate as pace."""
from datetime import timedelta

import pytest

from scheduler import problem_source, services
from scheduler.models import Job, SolverConfig
from scheduler.problem_source import problem_from_database


def test_a_job_behind_gets_the_pace_that_brings_it_back(measured, alice, bob, resnet50, monkeypatch):
    monkeypatch.setattr(problem_source, "behind_entitlement", lambda jobs, *args: jobs)  # the pace alone
    behind = services.job_submit(owner=alice, workload=resnet50, min_throughput=4.0, max_gpus=1, total_steps=28800).job
    new = services.job_submit(owner=bob, workload=resnet50, min_throughput=5.0, max_gpus=1, total_steps=28800).job
    unknown = services.job_submit(owner=bob, workload=resnet50, min_throughput=4.0, max_gpus=1).job
    Job.objects.filter(pk=behind.pk).update(submitted_at=behind.submitted_at - timedelta(hours=1.5), steps_done=14400)
    specs = {spec.id: spec for spec in problem_from_database(SolverConfig.load()).jobs}
    # 1/3 of 4 V100 (10 steps/s) and 2 K80 (4): 4/3 + 2/3 of the time, scaled to 2/3 and 1/3,
    # fair rate 10 x 2/3 + 4 / 3 = 8 steps/s: 3600 s with 1/n of the cluster, rho 2 at 7200 s.
    # behind: 14400 steps left in the 7200 - 5400 = 1800 s left: 8 steps/s (T_min 4, best 10).
    assert specs[str(behind.pk)].pace == pytest.approx(8.0, rel=1e-3)
    # new: 28800 steps in 7200 s need 4 steps/s, below its T_min 5: no pace; no total_steps: none
    assert specs[str(new.pk)].pace == 0.0
    assert specs[str(unknown.pk)].pace == 0.0


def test_with_one_tenant_no_job_is_paced(measured, alice, resnet50):
    """The same job as above, behind its rho bound, on a cluster with one tenant: T_min is the
    whole promise (finish_time.shared_by_tenants), so no pace."""
    behind = services.job_submit(owner=alice, workload=resnet50, min_throughput=4.0, max_gpus=1, total_steps=28800).job
    Job.objects.filter(pk=behind.pk).update(submitted_at=behind.submitted_at - timedelta(hours=1.5), steps_done=14400)
    (spec,) = problem_from_database(SolverConfig.load()).jobs
    assert spec.pace == 0.0


def test_the_jobs_of_tenants_below_their_entitlement_get_their_best_rate_as_pace(measured, alice, bob, resnet50):
    """Nothing runs: both tenants hold none of the GPUs their jobs ask (short by all). bob's job
    of D_j 2 gets its fastest predicted rate within D_j (10 steps/s on one V100; two are not
    measured) as pace, worth 2 x 1 x 400 W; alice's single-GPU job keeps its own pace (28800
    steps at rho 2 with fair rate 8: just over its T_min 4), worth 400 W."""
    services.job_submit(owner=alice, workload=resnet50, min_throughput=4.0, max_gpus=1, total_steps=28800)
    services.job_submit(owner=bob, workload=resnet50, min_throughput=4.0, max_gpus=2)
    specs = problem_from_database(SolverConfig.load()).jobs
    assert [(spec.pace_weight, spec.pace) for spec in specs] == [(1.0, pytest.approx(4.0, rel=1e-3)),
                                                                 (2.0, pytest.approx(10.0))]


def test_with_one_tenant_no_job_is_paced_for_its_entitlement(measured, alice, resnet50):
    services.job_submit(owner=alice, workload=resnet50, min_throughput=4.0, max_gpus=1, total_steps=28800)
    (spec,) = problem_from_database(SolverConfig.load()).jobs
    assert spec.pace == 0.0 and spec.pace_weight == 1.0
