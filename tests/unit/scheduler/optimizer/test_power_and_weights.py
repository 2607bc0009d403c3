import pytest

from scheduler.optimizer import PowerCurve
from scheduler.optimizer.aggregation import aggregate, usage_levels
from scheduler.optimizer.weights import energy_weight

from .factory import node


def test_power_curve_interpolates_and_holds_the_ends():
    curve = PowerCurve.from_points([[0.2, 50], [0.6, 150], [1.0, 250]], idle_w=30, tdp_w=250)
    assert curve(0.0) == 50 and curve(0.2) == 50
    assert curve(0.4) == pytest.approx(100)
    assert curve(0.8) == pytest.approx(200)
    assert curve(1.5) == 250


def test_empty_curve_is_linear_from_idle_to_tdp():
    assert PowerCurve.from_points([], idle_w=30, tdp_w=230)(0.5) == pytest.approx(130)


def test_adaptive_weight_follows_the_formula_and_is_clipped():
    history = (0.4, 0.6)  # mean 0.5, std 0.1
    assert energy_weight(base=2.0, current_load=0.6, history=history, window=10, clip=(0.25, 4)) == pytest.approx(4.0)
    assert energy_weight(base=2.0, current_load=0.55, history=history, window=10, clip=(0.25, 4)) == pytest.approx(3.0)
    assert energy_weight(base=2.0, current_load=5.0, history=history, window=10, clip=(0.25, 4)) == 8.0
    assert energy_weight(base=2.0, current_load=0.0, history=history, window=10, clip=(0.25, 4)) == 0.5


def test_adaptive_weight_uses_only_the_window_and_needs_spread():
    assert energy_weight(base=1.0, current_load=0.9, history=(0.5,), window=10, clip=(0.25, 4)) == 1.0
    assert energy_weight(base=1.0, current_load=0.9, history=(0.5, 0.5), window=10, clip=(0.25, 4)) == 1.0
    # only the last two count: mean 0.5, std 0.1
    assert energy_weight(
        base=1.0, current_load=0.6, history=(9.0, 0.4, 0.6), window=2, clip=(0.1, 10)
    ) == pytest.approx(2.0)


def test_capacity_levels_by_node_shape():
    gpus = tuple(node("v100", "a", 8) + node("v100", "b", 4) + node("v100", "c", 3) + node("k80", "d", 2))
    cap = aggregate(gpus)
    assert cap["v100"].levels == {1: 15, 2: 14, 4: 12, 8: 8}
    assert cap["v100"].node_shape == ((3, 1), (4, 1), (8, 1))
    assert cap["k80"].levels == {1: 2, 2: 2}
    assert usage_levels(4, True, (1, 2, 4, 8)) == (1, 2, 4)
    assert usage_levels(4, False, (1, 2, 4, 8)) == (1,)
