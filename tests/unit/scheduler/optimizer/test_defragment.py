"""Placement frees a node for an admitted multi-GPU job (defragment.py), worked out by hand on
two nodes of two GPUs of one type. Jobs 1 and 2 (workload a, 10 steps/s on one GPU, T_min 5)
run on n0-0 and n1-0; job 3 (workload big: 12 steps/s on two GPUs of one node, 6 spread over
two nodes or on one GPU, T_min 10) waits and meets T_min only on a whole node. Two GPUs are
free, one on each node: the aggregated model admits job 3, and placement must move job 1 or
job 2 beside the other to give it a node."""
from dataclasses import replace

import pytest

from scheduler.optimizer import RunningWork, get_solver, keep_work
from scheduler.optimizer.admission_keeps import KEEPS_WORK_S
from scheduler.optimizer.placement import FREED_NODE
from scheduler.optimizer.problem import QuotaSpec

from .factory import TablePredictions, gpu_type, job, node, problem

SOLVERS = ["ilp", "genetic"]
TYPE = gpu_type("v", tdp=300)
PREDS = TablePredictions(taus={("a", "v", 1, True): 10, ("big", "v", 1, True): 6, ("big", "v", 2, True): 12,
                               ("big", "v", 2, False): 6})
GPUS = node("v", "n0", 2) + node("v", "n1", 2)


def work(steps_since_checkpoint: float, *, placed_s_ago: float = 7200.0) -> RunningWork:
    return RunningWork(
        steps_since_checkpoint=steps_since_checkpoint, remaining_steps=500_000.0, steps_per_s=10.0, power_w=250.0,
        num_gpus=1, restart_overhead_s=30.0, placed_s_ago=placed_s_ago, preemptions_last_hour=0, running=True,
    )


def cluster(work_1: RunningWork, work_2: RunningWork, *, tenants=("t", "t", "t"), quotas=(), service_2=False):
    """Jobs 1 and 2 running on n0-0 and n1-0 with their work, job 3 waiting; keep_work applied
    as the control plane applies it."""
    one = job(1, "a", tenant=tenants[0], tmin=5, current=(["n0-0"], []))
    two = replace(job(2, "a", tenant=tenants[1], tmin=5, current=(["n1-0"], [])), service=service_2)
    three = job(3, "big", tenant=tenants[2], tmin=10, dj=2)
    p = problem([one, two, three], GPUS, [TYPE], PREDS)
    p = replace(p, quotas=tuple(QuotaSpec(*q) for q in quotas))
    return replace(p, jobs=keep_work([(one, work_1), (two, work_2), (three, None)], p.settings))


def nodes_of(plan) -> dict[str, tuple[str, ...]]:
    return {job_id: placement.gpu_ids for job_id, placement in plan.placements.items()}


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_job_with_less_work_at_risk_moves_beside_the_other_and_the_waiting_job_takes_its_node(solver):
    plan = get_solver(solver).solve(cluster(work(36_000.0), work(600.0)))
    assert nodes_of(plan) == {"1": ("n0-0",), "2": ("n0-1",), "3": ("n1-0", "n1-1")}
    assert plan.placements["3"].consolidated and FREED_NODE.format(n=1) in plan.notes
    plan = get_solver(solver).solve(cluster(work(600.0), work(36_000.0)))
    assert nodes_of(plan) == {"1": ("n1-1",), "2": ("n1-0",), "3": ("n0-0", "n0-1")}


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_borrowers_job_moves_first_though_it_has_more_work_at_risk(solver):
    """Job 1's tenant b holds one GPU of type v beyond its quota of none (a borrower); tenant
    own's job 2 runs within own's quota of four, and so would job 3."""
    plan = get_solver(solver).solve(cluster(work(36_000.0), work(600.0), tenants=("b", "own", "own"),
                                            quotas=[("own", "v", 4)]))
    assert nodes_of(plan) == {"1": ("n1-1",), "2": ("n1-0",), "3": ("n0-0", "n0-1")}


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("why", ["pinned", "kept", "service"])
def test_nothing_moves_where_the_running_jobs_may_not_and_the_waiting_job_says_why(solver, why):
    """Both jobs pinned (placed a minute ago: in their move cool-down), or both with over a
    GPU-day at risk (kept), or job 2 a service replica and job 1 kept: job 3 waits."""
    day = KEEPS_WORK_S * 10.0 + 36_000.0  # steps at 10 steps/s: more than a GPU-day
    works = {"pinned": (work(600.0, placed_s_ago=60.0), work(600.0, placed_s_ago=60.0)),
             "kept": (work(day), work(day)), "service": (work(day), work(600.0))}[why]
    plan = get_solver(solver).solve(cluster(*works, service_2=why == "service"))
    assert nodes_of(plan) == {"1": ("n0-0",), "2": ("n1-0",)}
    assert "no node of type v has 2 free GPUs left" in plan.reasons["3"]
    assert not any(note == FREED_NODE.format(n=1) for note in plan.notes)


@pytest.mark.parametrize("solver", ["ilp"])
def test_with_topology_isolation_nothing_moves(solver):
    """Undoing PCIe switch owners is not done: the job waits as before."""
    p = cluster(work(36_000.0), work(600.0))
    p = replace(p, gpus=tuple(node("v", "n0", 2, switch_every=1) + node("v", "n1", 2, switch_every=1)),
                settings=replace(p.settings, topology_isolation=True))
    plan = get_solver(solver).solve(p)
    assert nodes_of(plan) == {"1": ("n0-0",), "2": ("n1-0",)} and "3" in plan.reasons
