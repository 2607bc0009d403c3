"""The power-limit model corrected per (workload, type) by readings (catalog/predictors/learnt_limits.py).

Hand-checked on the rule: readings q = a - b s (s the model's shortfall, q the rate over its
reference), priors a ~ N(1, 0.15^2), b ~ N(1, 0.3^2), each reading of spread 0.05 (weight 400);
the posterior (a, b) solves P (a, b) = r with P = diag(1/0.15^2, 1/0.3^2) + sum 400 (1, -s)(1, -s)^T
and r = (1/0.15^2 + 400 sum q, 1/0.3^2 - 400 sum s q); c = b / a."""
import math

import pytest

from catalog.predictors.learnt_limits import Correction, LearntLimits, LimitReading, correction

A0, B0, W = 1 / 0.15 ** 2, 1 / 0.3 ** 2, 400.0


def _solve(p_aa, p_ab, p_bb, r_a, r_b):
    det = p_aa * p_bb - p_ab ** 2
    a, b = (p_bb * r_a - p_ab * r_b) / det, (p_aa * r_b - p_ab * r_a) / det
    return a, b / a


def test_with_nothing_read_the_model_answers_as_it_is():
    limits = LearntLimits()
    assert limits.corrections("A", "v100") == (Correction(), Correction())
    assert limits.at_power_limit("A", "v100", (0.8, 0.7)) == pytest.approx((0.8, 0.7))
    assert limits.at_power_limit("A", "v100", None) is None


def test_readings_at_the_default_move_only_the_reference():
    # s = 0, one depth: the curve stays the model's, a = (A0 + 2W 1.1) / (A0 + 2W)
    learnt = correction([(1.0, 1.1), (1.0, 1.1)])
    assert learnt.reference == pytest.approx((A0 + 880) / (A0 + 800))
    assert learnt.factor == 1.0 and learnt.count == 0 and learnt.readings == 2


def test_readings_at_one_depth_leave_the_curve_as_the_model_has_it():
    """s 0.2, q 0.7 (the model says 0.8): one depth cannot tell a reference 12.5 % high from a
    curve 1.5 x steeper, so the reference alone takes it: a = (A0 + W 0.8 0.7) / (A0 + W 0.8^2)."""
    learnt = correction([(0.8, 0.7)] * 3)
    assert learnt.factor == 1.0 and learnt.count == 3
    assert learnt.reference == pytest.approx((A0 + 3 * W * 0.56) / (A0 + 3 * W * 0.64))
    assert learnt.at(0.8) == pytest.approx(0.8)
    # depths within DEPTH_STEP of each other are one depth
    assert correction([(0.8, 0.7), (0.81, 0.7)]).factor == 1.0


def test_a_second_depth_splits_the_error_between_the_reference_and_the_curve():
    # s 0.2, q 0.7 and s 0.4, q 0.4: P = [[A0+800, -240], [-240, B0+80]], r = (A0+440, B0-120)
    reference, factor = _solve(A0 + 800, -240, B0 + 80, A0 + 440, B0 - 120)
    learnt = correction([(0.8, 0.7), (0.6, 0.4)])
    assert (learnt.reference, learnt.factor) == pytest.approx((reference, factor))
    assert 1 < factor < 1.5  # toward what was seen (1.5 x the model's shortfall), not all the way
    assert learnt.at(0.9) == pytest.approx(1 - factor * 0.1)  # the same factor at another limit


def test_readings_at_the_default_and_at_a_limit_separate_the_two():
    # the reference 10 % high, the curve 1.5 x the model's at s 0.2: q 1.1 at the default, 1.1 x 0.7 at the limit
    learnt = correction([(1.0, 1.1)] * 20 + [(0.8, 1.1 * 0.7)] * 20)
    reference, factor = _solve(A0 + 40 * W, -20 * W * 0.2, B0 + 20 * W * 0.04, A0 + W * 20 * (1.1 + 0.77),
                               B0 - 20 * W * 0.2 * 0.77)
    assert (learnt.reference, learnt.factor) == pytest.approx((reference, factor))
    assert learnt.reference == pytest.approx(1.1, abs=0.01) and learnt.factor == pytest.approx(1.5, abs=0.05)
    assert learnt.count == 20 and learnt.readings == 40


def test_a_limit_the_model_has_not_slowing_the_job_reads_as_the_default():
    assert correction([(0.999, 1.1)] * 3) == correction([(1.0, 1.1)] * 3)


def test_a_limit_never_makes_a_job_faster_and_never_stops_it():
    faster = correction([(1.0, 1.0)] * 50 + [(0.8, 1.3)] * 50)
    assert faster.factor == 0.0 and faster.at(0.5) == 1.0
    slower = correction([(1.0, 1.0)] * 50 + [(0.9, 0.05)] * 50)
    assert slower.at(0.5) == 0.05


def test_speed_and_power_are_learnt_apart_and_per_workload_and_type():
    limits = LearntLimits([("A", "v100", LimitReading(model_speed=0.8, speed=0.7, model_power=0.8, power=0.9))])
    speed, power = limits.corrections("A", "v100")
    assert speed == correction([(0.8, 0.7)]) and power == correction([(0.8, 0.9)])
    assert limits.at_power_limit("A", "k80", (0.8, 0.8)) == pytest.approx((0.8, 0.8))
    assert limits.at_power_limit("B", "v100", (0.8, 0.8)) == pytest.approx((0.8, 0.8))


def test_a_new_reading_replaces_the_cached_correction():
    limits = LearntLimits()
    limits.add("A", "v100", LimitReading(model_speed=0.8, speed=0.7))
    assert limits.corrections("A", "v100")[0] == correction([(0.8, 0.7)])
    limits.add("A", "v100", LimitReading(model_speed=1.0, speed=1.0))
    assert limits.corrections("A", "v100")[0] == correction([(0.8, 0.7), (1.0, 1.0)])


@pytest.mark.parametrize("field, values", [
    ("speed", {"speed": 0.0}), ("speed", {"speed": math.nan}), ("speed", {"speed": 3.5}),
    ("model_speed", {"model_speed": -0.1}), ("model_speed", {"model_speed": 1.2}), ("power", {"power": math.inf}),
])
def test_a_reading_out_of_range_is_refused_naming_it(field, values):
    with pytest.raises(ValueError, match=f"^{field} must"):
        LimitReading(**{"model_speed": 0.8, "speed": 0.7, **values})
