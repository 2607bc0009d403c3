"""Expected finish-time fairness (finish_time.py): rho if the job runs at its T_min from now on,
over its time with 1/n of the cluster at the predicted throughputs; hand-checked."""
import math

import pytest

from scheduler.optimizer.finish_time import expected_rho, fair_rate

from .factory import TablePredictions

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


def test_a_workload_predicted_nowhere_has_no_fair_rate():
    assert fair_rate(PREDS, "unknown", 2, {"x": 4}, 2) == 0.0


def test_rho_counts_the_time_so_far_and_the_rest_at_t_min():
    # an hour in the system, 1000 of 2000 steps left at 0.5 steps/s: 3600 + 2000 s against 2000 / 2 s
    assert expected_rho(3600, 1000, 2000, 0.5, 2.0) == pytest.approx(5.6)
    # just arrived, T_min the fair rate: 1
    assert expected_rho(0, 2000, 2000, 2.0, 2.0) == pytest.approx(1.0)


@pytest.mark.parametrize("total, tmin, fair", [(0, 1, 1), (math.inf, 1, 1), (100, 0, 1), (100, 1, 0)])
def test_rho_is_one_where_it_cannot_be_told(total, tmin, fair):
    assert expected_rho(100, 50, total, tmin, fair) == 1.0
