"""Finish-time fairness in the plan (finish_time.py): the fair rate, a job's pace and what an
option is worth towards it, and the round that speeds a job behind within what admission
leaves; hand-checked."""
import math
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.feasibility import pace_worth
from scheduler.optimizer.finish_time import PACE_VALUE_W, best_rate, fair_rate, pace, pace_value, shared_by_tenants

from .factory import TablePredictions, gpu_type, job, node, problem

PREDS = TablePredictions(taus={("w", "x", 1, True): 10, ("w", "x", 2, True): 18, ("w", "y", 1, True): 4})


def test_the_fair_rate_is_the_best_size_within_d_j_with_one_nth_of_the_gpus():
    # D_j 2 on 4 x GPUs: 2 GPUs (18 steps/s); 1/2 of the cluster is all the time on 2 GPUs, 1/4 half of it
    assert fair_rate(PREDS, "w", 2, {"x": 4}, 2) == pytest.approx(18.0)
    assert fair_rate(PREDS, "w", 2, {"x": 4}, 4) == pytest.approx(9.0)
    # D_j 1: never 2 GPUs (10 steps/s on one)
    assert fair_rate(PREDS, "w", 1, {"x": 4}, 8) == pytest.approx(5.0)


def test_time_shares_above_the_whole_time_are_scaled_down_across_types():
    # 1/4 of 4 x and 2 y: x 1.0 + y 0.5 of the time, scaled to 2/3 and 1/3: 10 x 2/3 + 4 / 3 = 8
    assert fair_rate(PREDS, "w", 1, {"x": 4, "y": 2}, 4) == pytest.approx(8.0)


def test_a_workload_predicted_nowhere_has_no_fair_rate_and_no_best_rate():
    assert fair_rate(PREDS, "unknown", 2, {"x": 4}, 2) == 0.0
    assert best_rate(PREDS, "unknown", 2, ["x", "y"]) == 0.0
    assert best_rate(PREDS, "w", 2, ["x", "y"]) == 18.0  # 2 x within D_j
    assert best_rate(PREDS, "w", 1, ["y"]) == 4.0


def test_the_pace_brings_rho_to_the_bound_at_the_end():
    """2000 steps, fair rate 2: 1000 s with 1/n of the cluster; bound 2: 2000 s in all. After
    1000 s with 1000 steps left: 1000 steps in the 1000 s left, 1 step/s (T_min 0.5 is not
    enough; the best, 3, is). Running at it, the next round needs the same pace: 500 steps in
    the 500 s left."""
    assert pace(1000, 1000, 2000, 0.5, 2.0, 3.0, bound=2.0) == pytest.approx(1.0)
    assert pace(1500, 500, 2000, 0.5, 2.0, 3.0, bound=2.0) == pytest.approx(1.0)


def test_no_pace_while_t_min_is_enough():
    # 1000 steps left in 1000 s at T_min 1.0 ends at rho 2 exactly: no pace
    assert pace(1000, 1000, 2000, 1.0, 2.0, 3.0, bound=2.0) == 0.0
    assert pace(0, 2000, 2000, 2.0, 2.0, 3.0, bound=2.0) == 0.0


def test_a_pace_out_of_reach_is_the_best_rate():
    # 1000 steps in 100 s would need 10/s, the best is 3; past the bound already: the best too
    assert pace(1900, 1000, 2000, 0.5, 2.0, 3.0, bound=2.0) == pytest.approx(3.0)
    assert pace(5000, 1000, 2000, 0.5, 2.0, 3.0, bound=2.0) == pytest.approx(3.0)
    # nothing faster than T_min predicted: no pace (nothing to gain)
    assert pace(5000, 1000, 2000, 0.5, 2.0, 0.5, bound=2.0) == 0.0


@pytest.mark.parametrize("total, tmin, fair, left", [(0, 1, 1, 5), (math.inf, 1, 1, 5), (100, 0, 1, 5),
                                                      (100, 1, 0, 5), (100, 1, 1, 0)])
def test_no_pace_where_rho_cannot_be_told(total, tmin, fair, left):
    assert pace(500, left, total, tmin, fair, 10.0) == 0.0


def test_an_option_is_worth_the_part_of_the_way_to_the_pace_it_covers():
    assert pace_value(1.0, 3.0, 1.0) == 0.0  # at T_min
    assert pace_value(1.0, 3.0, 2.0) == pytest.approx(0.5)
    assert pace_value(1.0, 3.0, 5.0) == 1.0  # beyond the pace: no more
    assert pace_value(1.0, 0.0, 5.0) == 0.0  # no pace


def test_pace_worth_counts_the_energy_weight_at_least_one_and_never_for_a_probe():
    paced = replace(job(1, tmin=1.0), pace=3.0)
    assert pace_worth(paced, 2.0, 0.5) == pytest.approx(0.5 * PACE_VALUE_W)
    assert pace_worth(paced, 2.0, 2.0) == pytest.approx(2.0 * 0.5 * PACE_VALUE_W)
    assert pace_worth(replace(paced, probe=True), 2.0, 1.0) == 0.0
    assert pace_worth(job(1, tmin=1.0), 2.0, 1.0) == 0.0


SLOW, FAST = gpu_type("slow", tdp=100), gpu_type("fast", tdp=300)
TWO = TablePredictions(taus={("a", "slow", 1, True): 6, ("a", "fast", 1, True): 20})


def test_a_job_behind_its_pace_moves_to_the_faster_gpu_when_one_is_free():
    """A (T_min 5): slow 6/s at 100 W, fast 20/s at 300 W. Without a pace the slow GPU is
    cheaper (100 W against 300 W). With pace 20, the fast GPU is worth PACE_VALUE_W (400 W) more
    than T_min, the slow one 400 x (6 - 5) / 15 = 26.7 W: 300 - 400 = -100 W against 100 - 26.7
    = 73.3 W, so the fast one."""
    plain = problem([job(1, "a", tmin=5)], node("slow", "s", 1) + node("fast", "f", 1), [SLOW, FAST], TWO)
    assert get_solver("ilp").solve(plain).placements["1"].gpu_type == "slow"
    paced = replace(plain, jobs=(replace(plain.jobs[0], pace=20.0),))
    assert get_solver("ilp").solve(paced).placements["1"].gpu_type == "fast"


def test_a_pace_never_costs_another_job_its_place():
    """One fast GPU, one slow. B (T_min 10) runs only on fast (slow 6/s); A (pace 20) would
    like fast too. Admission comes first: both are placed, A on slow, B on fast."""
    preds = TablePredictions(taus={("a", "slow", 1, True): 6, ("a", "fast", 1, True): 20,
                                   ("b", "slow", 1, True): 6, ("b", "fast", 1, True): 20})
    jobs = [replace(job(1, "a", tmin=5), pace=20.0), job(2, "b", tmin=10)]
    result = get_solver("ilp").solve(problem(jobs, node("slow", "s", 1) + node("fast", "f", 1), [SLOW, FAST], preds))
    assert result.placements["1"].gpu_type == "slow"
    assert result.placements["2"].gpu_type == "fast"


def test_paces_are_for_a_cluster_shared_by_two_tenants_or_more():
    assert not shared_by_tenants(0) and not shared_by_tenants(1)
    assert shared_by_tenants(2) and shared_by_tenants(4)
