"""Moves that pay for themselves and preemption by priority, over consecutive rounds: each
round's placements fed back as current, with the work each job would lose (keep_work)."""
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from scheduler.optimizer import Placement
from scheduler.optimizer.status_quo import KEPT_RUNNING

from . import test_properties as properties
from .factory import TablePredictions, gpu_type, job, node, problem
from .rounds import PowerTable, moves, next_round, solve, with_work, work_of

OPTIMISING = ["ilp", "genetic", "greedy_efficient"]
SLOW, FAST = gpu_type("slow", tdp=150), gpu_type("fast", tdp=300)


def busy_cluster(**settings):
    """Twelve jobs of three workloads and two priorities on 8 fast and 4 slow GPUs (more demand
    than GPUs, pairs possible): a decision with choices to make, and jobs left waiting."""
    taus, rhos = {}, {}
    for w, (fast, slow) in {"a": (4.0, 2.0), "b": (3.0, 2.5), "c": (5.0, 1.0)}.items():
        for k in (1, 2, 4):
            taus[(w, "fast", k, True)] = fast * k * 0.9
            taus[(w, "slow", k, True)] = slow * k * 0.9
            taus[(w, "fast", k, False)] = fast * k * 0.7
        for other in "abc":
            rhos[(w, other, "fast")] = 0.7
    jobs = [
        job(n, "abc"[n % 3], tenant="tu"[n % 2], tmin=[1.0, 2.0, 3.5, 1.5][n % 4], dj=[1, 2, 1, 4][n % 4],
            priority=n % 2)
        for n in range(12)
    ]
    gpus = node("fast", "f1", 4) + node("fast", "f2", 4) + node("slow", "s1", 4)
    return problem(jobs, gpus, [SLOW, FAST], PowerTable(taus, rhos), **settings)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_on_a_cluster_where_nothing_changes_consecutive_rounds_move_nothing(solver):
    p = busy_cluster(theta=2, genetic_generations=20)
    plan = solve(solver, p)
    assert plan.placements and plan.reasons  # choices were made, and some jobs wait
    for _ in range(3):
        p = next_round(p, plan)
        again = solve(solver, p)
        assert moves(plan, again) == {}
        assert set(again.placements) >= set(plan.placements)
        plan = again


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(properties.instances(), st.sampled_from([*OPTIMISING, "greedy", "cells"]), st.sampled_from([5.0, 5000.0]))
def test_on_random_clusters_where_nothing_changes_consecutive_rounds_move_nothing(p, solver, placed_s_ago):
    plan = solve(solver, p)
    for _ in range(2):
        p = next_round(p, plan, placed_s_ago=placed_s_ago)
        again = solve(solver, p)
        assert moves(plan, again) == {}
        plan = again


def moves_that_fragment_a_running_job():
    """Found by the property test below (Hypothesis). Two one-GPU p100 nodes, a one-GPU k80
    node and a two-GPU k80 node, PCIe switches isolated by tenant (one tenant here); workload a
    runs at 5.4 steps/s a p100 and 4.5 a k80, b and c at 0.9, and two c jobs share a p100 at
    full speed. The first round runs job 3 (T_min 8) spread over both p100s (8.4 steps/s), jobs
    0, 1 and 4 on the three k80s."""
    taus = {}
    for w, base in {"a": {"p100": 6.0, "v100": 1.0, "k80": 5.0}, "b": {}, "c": {}}.items():
        for t in ("k80", "p100", "v100"):
            for k in (1, 2, 4):
                taus[(w, t, k, True)] = base.get(t, 1.0) * k * 0.9
                taus[(w, t, k, False)] = base.get(t, 1.0) * k * 0.7
    jobs = [job(0, "c", tmin=0.5), job(1, "a"), job(2, "a", tmin=6.0), job(3, "a", tmin=8.0, dj=2), job(4, "a"),
            job(5, "a", tmin=6.0), job(6, "b")]
    gpus = node("p100", "n0", 1, 1) + node("p100", "n1", 1, 1) + node("k80", "n2", 1, 1) + node("k80", "n3", 2, 1)
    return problem(jobs, gpus, properties.TYPES, TablePredictions(taus, {("c", "c", "p100"): 1.0}),
                   topology_isolation=True, theta=2, cell_size_gpus=2, genetic_generations=5)


def with_newcomer(p, priority=0):
    return replace(p, jobs=p.jobs + (replace(p.jobs[0], id="new-0", priority=priority, current=None,
                                             move_penalty_w=None, pinned=False, work_at_risk=0.0),))


def test_a_running_job_that_the_decisions_moves_leave_without_a_node_keeps_its_gpus():
    """A copy of job 0 arrives at the lowest priority. The ILP's decision moves jobs 0 and 1 onto
    the p100s (0 sharing with the newcomer) and job 3 onto two k80s, which its count of free
    k80s allows, but no node has two free: job 4 stays on n3-1. Placing the decision would drop
    running job 3 for the newcomer; the decision with the moved jobs left where they run places
    every running job, and stands (the newcomer waits)."""
    p = moves_that_fragment_a_running_job()
    plan = solve("ilp", p)
    again = solve("ilp", with_newcomer(next_round(p, plan)))
    assert sorted(plan.placements) == sorted(again.placements) == ["0", "1", "3", "4"]
    assert moves(plan, again) == {}
    assert KEPT_RUNNING.format(n=1) in again.notes and "new-0" in again.reasons


def test_a_higher_priority_newcomer_still_preempts_and_the_running_job_losing_least_gives_way():
    """The same arrival at a priority above every running job: one running job must give way.
    The decision's placement drops job 3 (83.8 GPU-seconds at risk); placed again with job 3
    left where it runs, the newcomer still runs and job 1 (52.2) gives way instead: as many
    jobs of each level, less work lost."""
    p = moves_that_fragment_a_running_job()
    plan = solve("ilp", p)
    q = with_newcomer(next_round(p, plan), priority=9)
    assert {job.id: round(job.work_at_risk, 1) for job in q.jobs if job.current} == {
        "0": 141.1, "1": 52.2, "3": 83.8, "4": 52.2}
    again = solve("ilp", q)
    assert sorted(again.placements) == ["0", "3", "4", "new-0"]
    assert KEPT_RUNNING.format(n=1) in again.notes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(properties.instances(), st.sampled_from([*OPTIMISING, "greedy", "cells"]), st.integers(1, 4))
@example(moves_that_fragment_a_running_job(), "ilp", 1)
def test_on_random_clusters_waiting_jobs_of_the_lowest_priority_never_preempt(p, solver, arriving):
    """Every running job keeps running when jobs of the lowest priority arrive, unless the round
    places more jobs of a higher level than before: a job of a higher priority that waited
    (placement under switch isolation can leave one waiting where the aggregated model chose a
    type whose free GPUs are all on other tenants' switches) may take its GPUs."""
    plan = solve(solver, p)
    p = next_round(p, plan)
    newcomers = tuple(
        replace(job, id=f"new-{n}", priority=0, current=None, move_penalty_w=None, pinned=False, work_at_risk=0.0)
        for n, job in enumerate(p.jobs[:arriving])
    )
    again = solve(solver, replace(p, jobs=p.jobs + newcomers))
    level = {job.id: job.priority for job in p.jobs}
    levels = sorted(set(level.values()), reverse=True)

    def by_level(placed):
        return [sum(1 for job_id in placed if level.get(job_id) == lvl) for lvl in levels]

    assert set(plan.placements) <= set(again.placements) or by_level(again.placements) > by_level(plan.placements)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_out_of_the_cool_down_too_nothing_moves(solver):
    p = busy_cluster(theta=2, genetic_generations=20)
    plan = solve(solver, p)
    for placed_s_ago in (5.0, 5000.0):
        again = solve(solver, next_round(p, plan, placed_s_ago=placed_s_ago))
        assert moves(plan, again) == {}


def one_job_slow_or_fast(remaining: float, solver: str = "ilp", **settings):
    """Job 1 runs alone on the slow GPU (300 W measured), T_min met on both types at the same
    2 steps/s; the fast GPU is free and draws 200 W for it: moving saves 100 W.
    The move throws away 100 steps since the checkpoint (50 s at 2 steps/s) + 30 s restart
    overhead = 80 s at 300 W = 24000 J, x 1.2 (hysteresis) = 28800 J, + 50 W flat.
    Over `remaining` steps (remaining / 2 s): 2000 steps -> 28.8 + 50 = 78.8 W < 100 W: it moves;
    400 steps -> 144 + 50 = 194 W > 100 W: it stays."""
    taus = {("a", "slow", 1, True): 2.0, ("a", "fast", 1, True): 2.0}
    powers = {("a", "slow"): 300.0, ("a", "fast"): 200.0}
    settings = {"migration_cost_w": 50.0, "move_hysteresis": 0.2, **settings}
    p = problem([job(1, "a", tmin=1.0, current=(["s-0"], []))], node("slow", "s", 1) + node("fast", "f", 1),
                [SLOW, FAST], PowerTable(taus, {}, powers=powers), **settings)
    placement = solve(solver, replace(p, jobs=tuple(replace(j, current=None) for j in p.jobs))).placements["1"]
    assert placement.gpu_type == "fast"  # from scratch, fast is the cheaper one
    slow = replace(placement, gpu_type="slow", gpu_ids=("s-0",), predicted_power_w=300.0)
    return with_work(p, {"1": work_of(slow, remaining=remaining)})


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_a_move_happens_when_its_saving_over_the_remaining_time_beats_its_cost(solver):
    p = one_job_slow_or_fast(2000.0, solver)
    assert p.jobs[0].move_penalty_w == pytest.approx(78.8)
    assert solve(solver, p).placements["1"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_move_that_does_not_pay_is_not_made(solver):
    p = one_job_slow_or_fast(400.0, solver if solver != "greedy_efficient" else "ilp")
    assert p.jobs[0].move_penalty_w == pytest.approx(194.0)
    assert solve(solver, p).placements["1"].gpu_ids == ("s-0",)


def test_the_flat_migration_cost_alone_would_have_moved_it():
    """Without the work it carries (no keep_work: the flat 50 W), the same job moves."""
    p = one_job_slow_or_fast(400.0)
    flat = replace(p, jobs=tuple(replace(j, move_penalty_w=None, pinned=False) for j in p.jobs))
    assert solve("ilp", flat).placements["1"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_a_job_in_its_cool_down_stays_even_where_a_move_would_pay(solver):
    p = one_job_slow_or_fast(2000.0, solver, move_cooldown_s=600.0)
    pinned = replace(p, jobs=tuple(replace(j, pinned=True) for j in p.jobs))
    assert solve(solver, pinned).placements["1"].gpu_ids == ("s-0",)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_job_moved_once_is_not_moved_back_by_the_next_round(solver):
    """Job 1 moved from slow to fast (it paid); the next round's predictions make slow 20 W
    cheaper than fast again (as telemetry revises them): within its cool-down it stays, and
    after it too, as 20 W does not pay for the work a move throws away."""
    first = one_job_slow_or_fast(2000.0)
    moved = solve("ilp", first)
    assert moved.placements["1"].gpu_ids == ("f-0",)
    revised = replace(first.predictions, powers={("a", "slow"): 180.0, ("a", "fast"): 200.0})
    for placed_s_ago in (60.0, 5000.0):
        p = next_round(replace(first, predictions=revised), moved, placed_s_ago=placed_s_ago)
        assert solve(solver, p).placements["1"].gpu_ids == ("f-0",)


def two_running_one_arriving(priority: int, *, at_limit: tuple[str, ...] = (), dearer: str = "1"):
    """Jobs 1 and 2 (priority 0) run on the two GPUs; job `dearer` would lose 400 s of work on
    its GPU, the other 100 s; job 3 of `priority` arrives and needs one GPU."""
    taus = {("a", "fast", 1, True): 2.0}
    gpus = node("fast", "f", 2)
    jobs = [job(1, "a", current=(["f-0"], [])), job(2, "a", current=(["f-1"], [])), job(3, "a", priority=priority)]
    p = problem(jobs, gpus, [FAST], PowerTable(taus, {}), theta=1, max_preemptions_per_hour=2)
    plan = solve("ilp", replace(p, jobs=tuple(replace(j, current=None) for j in p.jobs[:2])))
    works = {
        x: work_of(plan.placements[x], since_checkpoint=740.0 if x == dearer else 140.0,
                   preemptions=2 * (x in at_limit))
        for x in ("1", "2")
    }
    return with_work(p, works)


@pytest.mark.parametrize("solver", [*OPTIMISING, "greedy"])
@pytest.mark.parametrize("dearer,victim", [("1", "2"), ("2", "1")])
def test_a_higher_priority_job_preempts_the_running_job_that_loses_least_work(solver, dearer, victim):
    p = two_running_one_arriving(1, dearer=dearer)
    risk = {j.id: j.work_at_risk for j in p.jobs}
    assert risk[dearer] == pytest.approx(400.0) and risk[victim] == pytest.approx(100.0)
    plan = solve(solver, p)
    assert set(plan.placements) == {dearer, "3"} and victim in plan.reasons
    assert plan.placements[dearer].gpu_ids == {"1": ("f-0",), "2": ("f-1",)}[dearer]  # it stays on its GPU


@pytest.mark.parametrize("solver", [*OPTIMISING, "greedy"])
def test_a_same_priority_pending_job_never_preempts(solver):
    plan = solve(solver, two_running_one_arriving(0))
    assert plan.placements["1"].gpu_ids == ("f-0",) and plan.placements["2"].gpu_ids == ("f-1",)
    assert "3" in plan.reasons


@pytest.mark.parametrize("solver", [*OPTIMISING, "greedy"])
def test_a_job_at_its_preemption_limit_is_not_preempted(solver):
    plan = solve(solver, two_running_one_arriving(1, at_limit=("2",)))
    assert set(plan.placements) == {"2", "3"} and plan.placements["2"].gpu_ids == ("f-1",)
    plan = solve(solver, two_running_one_arriving(1, at_limit=("1", "2")))
    assert set(plan.placements) == {"1", "2"} and "3" in plan.reasons


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_running_job_below_its_t_min_now_keeps_its_gpu_rather_than_stop(solver):
    """Predictions fell since job 1 was placed on the only GPU: 0.5 steps/s against T_min 1.
    Stopping it would lose its work; it keeps running there (a waiting job would not be placed)."""
    taus = {("a", "slow", 1, True): 0.5}
    p = problem([job(1, "a", tmin=1.0, current=(["s-0"], [])), job(2, "a", tmin=1.0)], node("slow", "s", 1),
                [SLOW], PowerTable(taus, {}))
    placed = replace(solve("ilp", replace(p, jobs=(replace(p.jobs[0], min_throughput=0.1),))).placements["1"])
    plan = solve(solver, with_work(p, {"1": work_of(placed)}))
    assert plan.placements["1"].gpu_ids == ("s-0",)
    assert "2" in plan.reasons


def shared_then_alone(pinned: bool):
    """Jobs 1 and 2 share fast GPU f-1; f-0 is free. Job 2's memory need was revised to 10 GB:
    with job 1's 10 GB they no longer fit one 16 GB GPU together. Job 1 alone keeps f-1 (only
    its partner changes: no restart), job 2 leaves for f-0."""
    taus = {("a", "fast", 1, True): 4.0, ("b", "fast", 1, True): 4.0}
    rhos = {("a", "b", "fast"): 0.8, ("b", "a", "fast"): 0.8}
    jobs = [job(1, "a", current=(["f-1"], ["2"]), memory=10), job(2, "b", current=(["f-1"], ["1"]), memory=10)]
    p = problem(jobs, node("fast", "f", 2), [FAST], PowerTable(taus, rhos), theta=2)
    works = {
        "1": work_of(shared("1", "2"), placed_s_ago=30.0 if pinned else 5000.0),
        "2": work_of(shared("2", "1"), placed_s_ago=5000.0),
    }
    return with_work(p, works)


def shared(job_id: str, partner: str) -> Placement:
    return Placement(job_id, "fast", ("f-1",), True, (partner,), 3.2, 150.0)


@pytest.mark.parametrize("solver", OPTIMISING)
@pytest.mark.parametrize("pinned", [True, False])
def test_a_job_whose_partner_leaves_stays_on_its_gpu(solver, pinned):
    plan = solve(solver, shared_then_alone(pinned))
    assert plan.placements["1"].gpu_ids == ("f-1",) and plan.placements["1"].partners == ()
    assert plan.placements["2"].gpu_ids == ("f-0",)


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_a_pair_that_only_ties_the_cheapest_alone_is_offered_from_the_first_round(solver):
    """Two jobs, one K80 (150 W) and a V100 (300 W) where the pair keeps full speed: each job's
    cheapest alone is the K80, 150 + 150 = the pair's 300 W, a tie; but only one can have the K80,
    so alone they draw 450 W. The pair is placed at once, and the next round moves nothing
    (offered only once a job ran on the V100, it moved a job with nothing changed)."""
    taus = {("a", t, 1, True): 0.9 for t in ("k80", "v100")}
    p = problem([job(0, "a", tmin=0.5), job(1, "a", tmin=0.5)], node("v100", "n0", 1) + node("k80", "n2", 1),
                [gpu_type("v100", tdp=300), gpu_type("k80", tdp=150)],
                PowerTable(taus, {("a", "a", "v100"): 1.0}), theta=2)
    plan = solve(solver, p)
    assert {pl.gpu_ids for pl in plan.placements.values()} == {("n0-0",)} and plan.power_w == pytest.approx(300.0)
    again = solve(solver, next_round(p, plan, placed_s_ago=5000.0))
    assert moves(plan, again) == {}
