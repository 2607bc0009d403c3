"""Solvers at their time limit: a solve that stops never admits fewer jobs than the admission
decision it started from, and says so; and time limits count CPU time, so a busy machine (wall
time passing while the solver waits for a core) does not change a decision. Limits are forced
(a limit of 0, or a clock that has run out), never timed."""
import random
import time
from collections import Counter
from dataclasses import replace

import highspy
import pulp
import pytest

from scheduler.optimizer import cpu_clock, get_solver, ilp
from scheduler.optimizer.cell_routing import GUIDE_GREEDY, GUIDE_ROUNDED
from scheduler.optimizer.cells import GUIDE_SOLVED, CellsSolver
from scheduler.optimizer.genetic import NO_RELAXATION
from scheduler.optimizer.ilp import IlpSolver
from scheduler.optimizer.problem import SolverSettings

from .factory import TablePredictions, gpu_type, job, node, problem

EFF, OLD = gpu_type("eff", tdp=100), gpu_type("old", tdp=300)
START = (("x", "old", 1, True, ()), ("y", "eff", 1, True, ()))  # both jobs: x on old, y on eff


def trap(prefix="", cell=""):
    """One eff GPU and one old GPU. Job x runs on either (cheaper on eff), job y only on eff:
    the greedy decision gives x the eff GPU and leaves y out; both run with x on old."""
    jobs = [job(f"{prefix}x", "x", tmin=5), job(f"{prefix}y", "e", tmin=5)]
    gpus = [replace(g, cell=cell) for g in node("eff", f"{prefix}a", 1) + node("old", f"{prefix}b", 1)]
    return jobs, gpus


PREDS = TablePredictions(taus={("x", "eff", 1, True): 10, ("x", "old", 1, True): 10, ("e", "eff", 1, True): 10})


def trap_problem(**settings):
    jobs, gpus = trap()
    return problem(jobs, gpus, [EFF, OLD], PREDS, **settings)


def two_cells(**settings):
    """Two cells, each one trap: the greedy decision admits 2 jobs, the global optimum 4."""
    jobs_a, gpus_a = trap("a-", "a")
    jobs_b, gpus_b = trap("b-", "b")
    return problem(jobs_a + jobs_b, gpus_a + gpus_b, [EFF, OLD], PREDS, **settings)


def clock_run_out(monkeypatch):
    """HiGHS's interrupt callback sees a CPU clock past every deadline (the solver's own checks
    before each phase do not: HiGHS is started and stopped from inside its run)."""
    monkeypatch.setattr(cpu_clock, "cpu_now", lambda: float("inf"))


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_an_ilp_that_stops_at_its_time_limit_keeps_its_admission_start(backend):
    """A cell's ILP starts from its share of the coordinator's decision (both jobs). With no
    time it fell back to the greedy decision, which leaves y out: now to the start."""
    p = replace(trap_problem(time_limit_s=0.0, backend=backend), admission_start=START)
    result = get_solver("ilp").solve(p)
    assert set(result.placements) == {"x", "y"}
    assert result.status == "fallback"
    assert "time limit" in result.fallback_reason and "fell back to the admission start" in result.fallback_reason


@pytest.fixture(scope="module")
def benchmark_24():
    """The 24-GPU benchmark instance of seed 3 (big enough that HiGHS's presolve does not
    solve it before its first callback): the ILP admits 18 jobs, the greedy decision 17."""
    from catalog.gavel import read_throughputs
    from scheduler.optimizer import bench
    from scheduler.optimizer.catalog_predictions import CatalogPredictions
    from scheduler.optimizer.problem import SolverSettings

    settings = SolverSettings(adaptive_weight=False, migration_cost_w=0.0)
    return bench.make_instance(24, CatalogPredictions.from_gavel(read_throughputs()), 3, settings)


def test_highs_interrupted_by_the_cpu_clock_without_an_answer_falls_back_to_its_start(monkeypatch, benchmark_24):
    """PuLP reads an interrupted HiGHS run as 'integer feasible' even with no solution; taken
    at its word, the ILP would have answered an empty decision."""
    p = benchmark_24
    best = get_solver("ilp").solve(p)
    start = tuple(
        (pl.job_id, pl.gpu_type, pl.num_gpus, pl.consolidated, pl.partners) for pl in best.placements.values()
    )
    clock_run_out(monkeypatch)
    result = get_solver("ilp").solve(replace(p, admission_start=start))
    assert admitted(result, p) == admitted(best, p) > admitted(get_solver("greedy").solve(p), p)
    assert result.status == "fallback" and "(stopped at its time limit)" in result.fallback_reason
    assert "fell back to the admission start" in result.fallback_reason


def test_highs_interrupted_without_a_start_falls_back_to_the_greedy_decision(monkeypatch, benchmark_24):
    clock_run_out(monkeypatch)
    result = get_solver("ilp").solve(benchmark_24)
    assert admitted(result, benchmark_24) == admitted(get_solver("greedy").solve(benchmark_24), benchmark_24)
    assert result.status == "fallback" and "(stopped at its time limit)" in result.fallback_reason
    assert result.fallback_reason.endswith("fell back to the greedy decision.")


def admitted(result, p):
    """Placed jobs per priority level, highest first."""
    priority = {j.id: j.priority for j in p.jobs}
    counts = Counter(priority[job_id] for job_id in result.placements)
    return [counts[level] for level in sorted(set(priority.values()), reverse=True)]


def test_cells_whose_solves_stop_at_their_time_limit_keep_the_coordinators_decision():
    """Each cell's ILP gets no time: each keeps its share of the coordinator's decision (both
    of its jobs) instead of its greedy decision (one), so the whole-cluster solve that used to
    mend the shortfall is not needed, and the allocation says the cells fell back."""
    def no_time(problems):
        return [IlpSolver().solve(replace(p, settings=replace(p.settings, time_limit_s=0.0))) for p in problems]

    p = two_cells()
    result = CellsSolver(run_cells=no_time).solve(p)
    assert admitted(result, p) == admitted(get_solver("ilp").solve(p), p) == [4]
    assert result.status == "fallback" and "fell back to the admission start" in result.fallback_reason
    assert GUIDE_SOLVED not in result.notes


def test_when_the_whole_cluster_is_solved_after_the_cells_their_fallbacks_stay_in_the_notes():
    """Cell a: one eff and one old GPU; cell b: one eff GPU. The priority-1 job needs both eff
    GPUs (spread), which no cell has, so the cells admit less than the coordinator's decision
    and the whole cluster is solved from it: that answer's notes still say the cells fell back."""
    def no_time(problems):
        return [IlpSolver().solve(replace(p, settings=replace(p.settings, time_limit_s=0.0))) for p in problems]

    preds = TablePredictions(taus={
        ("a", "eff", 1, True): 1.0, ("a", "eff", 2, False): 3.0, ("s", "eff", 1, True): 1.0, ("s", "old", 1, True): 1.0,
    })
    jobs = [job("big", "a", tmin=2, dj=2, priority=1), job("small", "s", tmin=1)]
    gpus = ([replace(g, cell="a") for g in node("eff", "n0", 1) + node("old", "n2", 1)]
            + [replace(g, cell="b") for g in node("eff", "n1", 1)])
    result = CellsSolver(run_cells=no_time).solve(problem(jobs, gpus, [EFF, OLD], preds))
    assert set(result.placements) == {"big", "small"} and GUIDE_SOLVED in result.notes
    assert any(note.startswith("A cell's solve fell back: ") and "time limit" in note for note in result.notes)


def test_a_coordinator_out_of_time_routes_by_the_greedy_decision_and_says_so():
    """No time for the relaxation: the greedy decision guides (2 of 4 jobs), the cells admit
    at least that, and the notes and status say the decision is not proven."""
    p = two_cells(time_limit_s=0.0)
    result = get_solver("cells").solve(p)
    assert sum(admitted(result, p)) >= 2
    assert GUIDE_GREEDY in result.notes and result.status != "optimal"


def test_a_coordinator_out_of_time_for_the_integer_program_says_its_decision_is_unproven(monkeypatch):
    """exact_choices answers the rounded relaxation, unproven, when rounding falls short and
    the integer program has no time (test_cells.py has an instance where rounding falls short)."""
    from scheduler.optimizer import cell_routing

    real = cell_routing.exact_choices
    monkeypatch.setattr(cell_routing, "exact_choices", lambda *args: (real(*args)[0], False))
    p = two_cells()
    result = get_solver("cells").solve(p)
    assert admitted(result, p) == [4]
    assert GUIDE_ROUNDED in result.notes and result.status != "optimal"


def test_genetic_without_time_admits_at_least_its_greedy_seed_and_says_so():
    p = trap_problem(time_limit_s=0.0, theta=1)
    result = get_solver("genetic").solve(p)
    assert len(result.placements) >= len(get_solver("greedy").solve(p).placements)
    assert NO_RELAXATION in result.notes
    assert any(note.startswith("Stopped at the time limit") for note in result.notes)


def wall_clock_racing(monkeypatch):
    """Every reading of the wall clock 1000 s after the last: a machine so busy that the
    solver waits that long for a core between any two steps."""
    readings = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(readings)))


@pytest.mark.parametrize("solver", ["ilp", "cells", "genetic"])
def test_wall_clock_time_passing_spends_no_time_limit(monkeypatch, solver):
    """With wall-clock limits every solve here ran out of time at once: the ILP fell back to
    the greedy decision, the coordinator routed by it, the genetic algorithm lost its
    relaxed seed (each 2 jobs of 4). Counted in CPU time, each decides as on a quiet machine."""
    wall_clock_racing(monkeypatch)
    p = two_cells(theta=1)
    result = get_solver(solver).solve(p)
    assert admitted(result, p) == [4]
    assert result.fallback_reason == ""
    assert not any("time" in note for note in result.notes), result.notes


def knapsacks(seed=1, items=60, rows=40):
    """A multi-knapsack integer program HiGHS needs hundreds of branch-and-bound nodes for."""
    rng = random.Random(seed)
    lp = pulp.LpProblem("knapsacks", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(items)]
    lp += pulp.lpSum(rng.randint(1, 100) * v for v in x)
    for r in range(rows):
        lp += pulp.lpSum(rng.randint(1, 50) * x[i] for i in rng.sample(range(items), 20)) <= 200, f"r{r}"
    return lp


def test_a_node_limit_stops_highs_by_work_whatever_the_clock_says(monkeypatch):
    """simulate's work limit (SolverSettings.node_limit): HiGHS stops after that many nodes
    with its incumbent, and the CPU clock is not consulted (one that has run out changes
    nothing): the same answer on any machine."""
    def solve():
        lp = knapsacks()
        lp.solve(ilp.backend("highs", limit=cpu_clock.Limit.of(0.0, 0.0, nodes=20), gap=0.0))
        highs = lp.solverModel
        return highs.getModelStatus(), highs.getInfo().mip_node_count, pulp.value(lp.objective)

    lp = knapsacks()
    lp.solve(ilp.backend("highs", limit=cpu_clock.Limit.of(cpu_clock.cpu_now(), 60.0, nodes=0), gap=0.0))
    assert lp.solverModel.getInfo().mip_node_count > 40  # unlimited, it needs more: the limit binds
    fresh = solve()
    clock_run_out(monkeypatch)
    assert solve() == fresh
    status, nodes, value = fresh
    assert status == highspy.HighsModelStatus.kInterrupt and 20 <= nodes < 40 and value > 0


def test_a_maximising_program_stopped_at_its_limit_reports_its_bound_above_its_incumbent():
    """PuLP hands HiGHS a maximum negated; the bound the admission notes give ("admitted 58.7,
    bound 80.8") read -80.8 before it was turned back."""
    class Model:
        lp = knapsacks()

    status, gap, bound = IlpSolver._run(Model, "highs", cpu_clock.Limit.of(0.0, 0.0, nodes=20), 0.0, "admission")
    assert status == "feasible" and gap > 0
    assert bound >= pulp.value(Model.lp.objective) > 0


def test_cbc_gets_the_node_limit_and_no_time_limit_under_a_work_limit():
    by_work = ilp.backend("cbc", limit=cpu_clock.Limit.of(0.0, 0.0, nodes=5), gap=0.0)
    assert by_work.optionsDict["maxNodes"] == 5 and by_work.timeLimit is None
    by_time = ilp.backend("cbc", limit=cpu_clock.Limit.of(cpu_clock.cpu_now(), 3.0, nodes=0), gap=0.0)
    assert "maxNodes" not in by_time.optionsDict and 0 < by_time.timeLimit <= 3.0


def test_the_ilp_names_the_work_limit_it_stopped_at():
    settings = SolverSettings(node_limit=7)
    assert ilp.limit_words(settings) == "its work limit (7 branch-and-bound nodes)"
    assert ilp.limit_words(SolverSettings(time_limit_s=2.5)) == "its time limit (2.5 s of CPU time)"


def test_the_node_limit_callback_counts_nodes_of_the_mip_only():
    """The interrupt fires on a MIP callback at the limit's node count, not below it, and not on
    a simplex callback (whose node count means nothing); a CPU deadline is not read under it."""
    class Flag:
        user_interrupt = False

    class Out:
        mip_node_count = 0

    limit = cpu_clock.Limit.of(0.0, 0.0, nodes=5)
    for kind, nodes, stops in ((cpu_clock.MIP_INTERRUPT, 4, False), (cpu_clock.MIP_INTERRUPT, 5, True),
                               (cpu_clock.INTERRUPTS[0], 9, False)):
        flag, out = Flag(), Out()
        out.mip_node_count = nodes
        cpu_clock.interrupt_after(kind, "", out, flag, limit)
        assert flag.user_interrupt is stops
    flag = Flag()
    cpu_clock.interrupt_after(cpu_clock.MIP_INTERRUPT, "", Out(), flag, cpu_clock.Limit.of(0.0, 0.0, nodes=0))
    assert flag.user_interrupt is True  # by the clock: a deadline of 0 s has passed
