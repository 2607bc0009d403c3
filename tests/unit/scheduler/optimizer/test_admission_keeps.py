"""Admission keeps a running job whose move would throw away much work (admission_keeps.py), in
the ILP's admission programs and the genetic algorithm's fitness, on one fast and one slow GPU
worked out by hand. Job 1 (workload a: 10 steps/s on fast, 8 on slow,
T_min 5) runs on the fast GPU; job 2 (workload b: 10 on fast, 2 on slow, T_min 5) waits and
runs only on the fast GPU. Admitting job 2 means moving job 1 to the slow GPU."""
from dataclasses import replace

import pytest

from scheduler.optimizer import RunningWork, get_solver, keep_work
from scheduler.optimizer.admission_keeps import KEEPS_WORK_S, kept
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.problem import QuotaSpec

from .factory import TablePredictions, gpu_type, job, node, problem

SOLVERS = ["ilp", "genetic"]
FAST, SLOW = gpu_type("fast", tdp=300), gpu_type("slow", tdp=100)
PREDS = TablePredictions(taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 8,
                               ("b", "fast", 1, True): 10, ("b", "slow", 1, True): 2})


def cluster(since_checkpoint: float, *, waiting_priority=0, tenants=("t", "t"), quotas=(), checkpointed=True):
    """Job 1 running on f-0 with `since_checkpoint` steps (at 10 steps/s) it would redo, job 2
    waiting; keep_work applied as the control plane applies it."""
    running = job(1, "a", tenant=tenants[0], tmin=5, current=(["f-0"], []))
    waiting = job(2, "b", tenant=tenants[1], tmin=5, priority=waiting_priority)
    work = RunningWork(
        steps_since_checkpoint=since_checkpoint, remaining_steps=50_000.0, steps_per_s=10.0, power_w=250.0,
        num_gpus=1, restart_overhead_s=30.0, placed_s_ago=7200.0, preemptions_last_hour=0, running=True,
        checkpointed=checkpointed,
    )
    p = problem([running, waiting], node("fast", "f", 1) + node("slow", "s", 1), [FAST, SLOW], PREDS)
    p = replace(p, quotas=tuple(QuotaSpec(*q) for q in quotas))
    return replace(p, jobs=keep_work([(running, work), (waiting, None)], p.settings))


MORE_THAN_A_GPU_DAY = 30 * 3600 * 10.0  # steps: thirty hours at 10 steps/s


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("checkpointed", [True, False])
def test_the_waiting_job_waits_rather_than_move_a_job_with_more_than_a_gpu_day_of_work(solver, checkpointed):
    plan = get_solver(solver).solve(cluster(MORE_THAN_A_GPU_DAY, checkpointed=checkpointed))
    assert plan.placements["1"].gpu_ids == ("f-0",) and "2" not in plan.placements
    assert plan.reasons["2"].endswith(
        "1 running job(s) on fast would lose over 24 GPU-hours of work each if moved: not moved for it."
    )


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_job_with_less_than_a_gpu_day_of_work_at_risk_moves_for_the_waiting_job(solver):
    plan = get_solver(solver).solve(cluster(20 * 3600 * 10.0))
    assert plan.placements["1"].gpu_ids == ("s-0",) and plan.placements["2"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_waiting_job_of_a_higher_priority_still_moves_it(solver):
    plan = get_solver(solver).solve(cluster(MORE_THAN_A_GPU_DAY, waiting_priority=1))
    assert plan.placements["1"].gpu_ids == ("s-0",) and plan.placements["2"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", SOLVERS)
def test_an_owner_reclaims_its_quota_from_a_borrower_with_hours_of_work(solver):
    """Tenant own holds the quota of the fast GPU; job 1 of tenant b borrows it."""
    plan = get_solver(solver).solve(cluster(MORE_THAN_A_GPU_DAY, tenants=("b", "own"), quotas=[("own", "fast", 1)]))
    assert plan.placements["1"].gpu_ids == ("s-0",) and plan.placements["2"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("quotas", "kept_there"), [
    ([("own", "slow", 1)], True),  # no quota claims the fast GPU: job 1 holds the cohort's pool
    ([("own", "slow", 1), ("other", "fast", 1)], False),  # tenant other may reclaim it
])
def test_a_borrower_on_the_cohorts_pool_is_kept_a_borrower_of_an_owners_quota_is_not(solver, quotas, kept_there):
    """Job 1 of tenant b (no quota) runs on the fast GPU with more than a GPU-day of work;
    job 2 of tenant c, at the same priority, would take it. Where no quota claims the fast GPU,
    no owner can reclaim it: job 1 is kept like a job within quota and job 2 waits. Where
    tenant other's quota claims it, job 1 borrows what an owner may reclaim, and is not kept."""
    plan = get_solver(solver).solve(cluster(MORE_THAN_A_GPU_DAY, tenants=("b", "c"), quotas=quotas))
    if kept_there:
        assert plan.placements["1"].gpu_ids == ("f-0",) and "2" not in plan.placements
    else:
        assert plan.placements["1"].gpu_ids == ("s-0",) and plan.placements["2"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_job_running_within_its_tenants_quota_is_kept_from_a_borrower(solver):
    """Job 1's tenant own runs within its quota of the fast GPU (and holds one of the slow GPU,
    so a move keeps it within quota); job 2 of tenant b would borrow the fast GPU."""
    quotas = [("own", "fast", 1), ("own", "slow", 1)]
    plan = get_solver(solver).solve(cluster(MORE_THAN_A_GPU_DAY, tenants=("own", "b"), quotas=quotas))
    assert plan.placements["1"].gpu_ids == ("f-0",) and "2" not in plan.placements


def test_only_running_jobs_above_the_threshold_that_are_not_leaving_or_below_tmin_are_kept():
    p = cluster(MORE_THAN_A_GPU_DAY)
    assert p.jobs[0].work_at_risk > KEEPS_WORK_S
    assert list(kept(compile_instance(p))) == [0]
    for change in ({"leaving": True}, {"move_pays_at": 9.0}, {"work_at_risk": KEEPS_WORK_S}):
        changed = replace(p, jobs=(replace(p.jobs[0], **change), p.jobs[1]))
        assert kept(compile_instance(changed)) == {}
