"""What every solver does with probes (JobSpec.probe), only_gpu_type, and the margin that keeps
tight jobs on measured types (SolverSettings.unmeasured_margin_z). Hand-checked small cases."""
import json
import math
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.feasibility import MARGIN_HELD
from scheduler.optimizer.keep_work import RunningWork, keep_work
from scheduler.optimizer.reasons import FULL, NOT_SURE, PROBE_FULL, PROBE_NO_TYPE
from scheduler.optimizer.registry import SOLVERS
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict

from .factory import gpu_type, job, node, problem
from .test_exploration import DoubtfulPredictions

OLD, NEW = gpu_type("old", tdp=300), gpu_type("new", tdp=100)
OPTIMISING = ["ilp", "genetic", "cells"]


def in_cells(gpus):
    """Every node its own cell, so `cells` routes and second-chances rather than solving one ILP."""
    return [replace(g, cell=g.node) for g in gpus]


def probe(id, workload="p", gpu_type="new", dj=1, priority=0, current=None, tmin=100.0):
    return replace(job(id, workload, tmin=tmin, dj=dj, priority=priority, current=current),
                   probe=True, only_gpu_type=gpu_type)


def one_new_gpu(jobs):
    """One new GPU (node n) and one old GPU (node o). Workload w runs only on new (5/s); probe
    workload p is predicted at 1/s on new, far below its T_min 100."""
    preds = DoubtfulPredictions(taus={("w", "new", 1, True): 5, ("p", "new", 1, True): 1, ("p", "old", 1, True): 1})
    return problem(jobs, in_cells(node("new", "n", 1) + node("old", "o", 1)), [NEW, OLD], preds, cell_size_gpus=1)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_probe_never_displaces_a_waiting_job(solver):
    """The probe has priority 5, the job 0: still the job takes the one new GPU and the probe
    waits, told that probes only take what every other job leaves."""
    plan = get_solver(solver).solve(one_new_gpu([probe("x", priority=5), job("a", "w", tmin=4)]))
    assert set(plan.placements) == {"a"}
    assert plan.reasons["x"] == PROBE_FULL.format(k=1, gpu_type="new")


@pytest.mark.parametrize("solver", OPTIMISING)
def test_any_job_preempts_a_running_probe(solver):
    """The probe runs on n-0 (keep_work: placed long ago, it is pinned, level 2p + 1, even at its
    preemption limit); a waiting job needs that GPU: the probe is stopped."""
    work = RunningWork(10, None, 1.0, 100.0, 1, 30.0, 5000.0, preemptions_last_hour=5, running=True)
    p = one_new_gpu([probe("x", priority=3, current=(["n-0"], ())), job("a", "w", tmin=4)])
    kept = keep_work([(p.jobs[0], work), (p.jobs[1], None)], p.settings)
    assert kept[0].pinned and kept[0].priority == 7
    plan = get_solver(solver).solve(replace(p, jobs=kept))
    assert set(plan.placements) == {"a"} and "x" in plan.reasons


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_probe_runs_below_t_min_on_its_type_and_stays_put(solver):
    """With the GPU free, the probe runs on new (only_gpu_type; p is predicted on old too) at its
    predicted 1/s, although T_min is 100."""
    plan = get_solver(solver).solve(one_new_gpu([probe("x")]))
    assert plan.placements["x"].gpu_type == "new" and plan.placements["x"].predicted_throughput == 1
    assert plan.reasons == {}


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_every_solver_runs_a_probe_without_a_prediction_and_keeps_it_on_its_type(solver):
    """A profiling case's workload has no prediction at all: a probe still runs, on its type, on
    exactly D_j GPUs (2 of new's 4), alone."""
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 5})
    p = problem([probe("x", workload="suite", dj=2), job("a", "w", tmin=4)],
                node("new", "n", 4) + node("old", "o", 2), [NEW, OLD], preds)
    plan = get_solver(solver).solve(p)
    assert plan.placements["x"].gpu_type == "new" and plan.placements["x"].num_gpus == 2
    assert plan.placements["x"].partners == ()


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_every_solver_keeps_a_job_on_its_only_gpu_type(solver):
    """w is as fast on both types and new draws a third of old's power, but the job may only
    run on old."""
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 5, ("w", "new", 1, True): 5})
    p = problem([replace(job("a", "w", tmin=4), only_gpu_type="old")],
                node("new", "n", 2) + node("old", "o", 2), [NEW, OLD], preds)
    assert get_solver(solver).solve(p).placements["a"].gpu_type == "old"


def test_a_job_whose_only_type_is_missing_is_told_so():
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 5})
    p = problem([replace(job("a", "w", tmin=4), only_gpu_type="h100")], node("old", "o", 2), [OLD], preds)
    assert get_solver("ilp").solve(p).reasons["a"] == PROBE_NO_TYPE.format(gpu_type="h100")


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_probe_shares_a_gpu_with_nobody(solver):
    """Jobs of one tenant on one new GPU each keeping 60% (3/s) of 5/s alone against T_min 2
    would share; with one of them a probe, each runs alone on its own GPU."""
    preds = DoubtfulPredictions(taus={("w", "new", 1, True): 5}, rhos={("w", "w", "new"): 0.6})
    gpus = in_cells(node("new", "n", 2))
    shared = get_solver(solver).solve(problem([job("a", "w", tmin=2), job("b", "w", tmin=2)], gpus, [NEW], preds))
    assert shared.placements["a"].partners == ("b",)
    plan = get_solver(solver).solve(problem([job("a", "w", tmin=2), replace(job("b", "w", tmin=2), probe=True)],
                                            gpus, [NEW], preds))
    assert plan.placements["a"].partners == () and plan.placements["b"].partners == ()
    assert plan.placements["a"].gpu_ids != plan.placements["b"].gpu_ids


def margin_case(tmin, **settings):
    """old: measured 16/s, 300 W. new: a datasheet guess of 20/s with log-sd 0.5, 100 W. With
    z = 1 a job may count on 20 e^-0.5 = 12.1/s on new."""
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 16, ("w", "new", 1, True): 20},
                                doubts={("w", "new", 1, True): (0.5, False)})
    return problem([job("a", "w", tmin=tmin)], node("old", "o", 1) + node("new", "n", 1), [OLD, NEW], preds,
                   **settings)


@pytest.mark.parametrize("solver", OPTIMISING)
def test_a_tight_job_goes_to_the_measured_type_and_a_loose_one_stays_free(solver):
    """T_min 15: 12.1 on new is below, so old (16 measured); T_min 10: new (12.1 >= 10, cheaper).
    Without the margin (z = 0) the tight job takes new too."""
    assert get_solver(solver).solve(margin_case(15)).placements["a"].gpu_type == "old"
    assert get_solver(solver).solve(margin_case(10)).placements["a"].gpu_type == "new"
    assert get_solver(solver).solve(margin_case(15, unmeasured_margin_z=0.0)).placements["a"].gpu_type == "new"


def test_the_pending_reason_says_the_margin_held_a_job_off_an_unmeasured_type():
    """T_min 18: old's 16 is too slow, new's 20 would do by its prediction but 12.1 is all it may count on."""
    reason = get_solver("ilp").solve(margin_case(18)).reasons["a"]
    held = MARGIN_HELD.format(gpu_type="new", tau=20, workload="w", log_sd=0.5, z=1.0)
    assert reason == NOT_SURE.format(tmin=18, dj=1) + held


def test_a_job_waiting_for_the_measured_type_is_told_the_margin_held_it_off_the_other():
    """Two jobs of T_min 15 and one old GPU: the one left out could run on new but for the margin."""
    p = margin_case(15)
    p = replace(p, jobs=(p.jobs[0], replace(p.jobs[0], id="b")))
    reason = get_solver("ilp").solve(p).reasons["b"]
    assert reason == FULL.format(k=1, gpu_type="old") + MARGIN_HELD.format(
        gpu_type="new", tau=20, workload="w", log_sd=0.5, z=1.0)


def test_the_margin_applies_to_groups_on_an_unmeasured_type():
    """Two jobs of T_min 10 on new keep 60% of 20 = 12/s sharing: enough by the prediction, not
    with the margin (12 e^-0.5 = 7.3); each then runs alone (12.1 >= 10) on its own GPU."""
    preds = DoubtfulPredictions(taus={("w", "new", 1, True): 20}, rhos={("w", "w", "new"): 0.6},
                                doubts={("w", "new", 1, True): (0.5, False)})
    jobs = [job("a", "w", tmin=10), job("b", "w", tmin=10)]
    plan = get_solver("ilp").solve(problem(jobs, node("new", "n", 2), [NEW], preds))
    assert plan.placements["a"].partners == ()
    free = get_solver("ilp").solve(problem(jobs, node("new", "n", 2), [NEW], preds, unmeasured_margin_z=0.0))
    assert free.placements["a"].partners == ("b",)


def test_probes_and_doubts_travel_to_a_cell_worker():
    p = margin_case(15)
    p = replace(p, jobs=p.jobs + (probe("x", workload="w", gpu_type="new"),))
    q = problem_from_dict(json.loads(json.dumps(problem_to_dict(p))))
    assert q.jobs == p.jobs and q.settings == p.settings
    assert q.predictions.uncertainty("w", "new", 1, True) == (0.5, False)
    assert q.predictions.uncertainty("w", "old", 1, True) == (0.0, True)
    assert get_solver("ilp").solve(q).placements == get_solver("ilp").solve(p).placements


def test_the_margin_is_a_number_of_standard_deviations():
    """z = 2: 20 e^-1 = 7.36 on new serves T_min 7 but not 7.5."""
    assert 20 * math.exp(-1.0) == pytest.approx(7.358, abs=1e-3)
    assert get_solver("ilp").solve(margin_case(7, unmeasured_margin_z=2.0)).placements["a"].gpu_type == "new"
    assert get_solver("ilp").solve(margin_case(7.5, unmeasured_margin_z=2.0)).placements["a"].gpu_type == "old"
