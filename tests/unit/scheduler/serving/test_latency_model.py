"""The latency model, its inverse and calibration, the forecast and the replica plan (pure)."""
import math

import pytest

from scheduler.serving import latency
from scheduler.serving.forecast import DAY_S, forecast_rate
from scheduler.serving.latency import calibrated, p99_ms, required_steps_per_s, target_ms, unloaded_floor_ms
from scheduler.serving.replicas import RATE_HEADROOM, UTILIZATION_TARGET, plan_replicas


def test_p99_is_one_batch_plus_the_queue_wait_by_hand():
    # 10 steps/s of batch 8: 80 requests/s served; 40 arriving. 100 ms + ln(100)/40 s.
    assert p99_ms(10, 40, 8) == pytest.approx(100 + 1000 * latency.LN_100 / 40)
    assert p99_ms(10, 40, 8, calibration=2) == pytest.approx(2 * (100 + 1000 * latency.LN_100 / 40))


def test_a_replica_that_cannot_keep_up_has_no_bounded_p99():
    assert p99_ms(10, 80, 8) == math.inf and p99_ms(10, 120, 8) == math.inf and p99_ms(0, 1, 8) == math.inf


@pytest.mark.parametrize("rate", [0.0, 5.0, 100.0, 2000.0])
@pytest.mark.parametrize("calibration", [0.5, 1.0, 3.0])
def test_the_required_speed_is_the_least_that_meets_the_target(rate, calibration):
    need = required_steps_per_s(rate, 50, 16, calibration, margin=0.2)
    target = target_ms(50, 0.2)
    assert p99_ms(need, rate, 16, calibration) <= target * (1 + 1e-9)
    assert p99_ms(need * 0.999, rate, 16, calibration) > target


def test_the_margin_plans_under_the_bound():
    assert target_ms(60, 0.2) == pytest.approx(50) and target_ms(60, 0) == 60
    assert required_steps_per_s(100, 60, 16, margin=0.2) > required_steps_per_s(100, 60, 16, margin=0)


def test_the_unloaded_floor_is_what_a_bound_must_allow():
    assert unloaded_floor_ms(10, 8) == pytest.approx(100 + 1000 * latency.LN_100 / 80)


def test_calibration_follows_reports_within_bounds():
    predicted = p99_ms(10, 40, 8)
    assert calibrated(1.0, predicted, predicted) == pytest.approx(1.0)
    up = calibrated(1.0, predicted, 2 * predicted)
    assert 1.0 < up < 2.0
    # what the model predicted with c = 2 is divided by c before the ratio is taken
    assert calibrated(2.0, 2 * predicted, 2 * predicted) == pytest.approx(2.0)
    assert calibrated(1.0, predicted, 1e6) <= latency.CALIBRATION_BOUNDS[1]
    assert calibrated(1.0, predicted, 1e-6) >= latency.CALIBRATION_BOUNDS[0]
    assert calibrated(1.3, math.inf, 50) == 1.3 and calibrated(1.3, 50, 0) == 1.3


def test_forecast_without_history_is_the_rate_now():
    samples = [(1000.0 - s, 40.0) for s in range(0, 300, 30)]
    assert forecast_rate(samples, 1000.0, 600) == pytest.approx(40)
    assert forecast_rate([], 1000.0, 600) == 0


def test_forecast_anticipates_yesterdays_rise_scaled_by_todays_trend():
    now = 3 * DAY_S + 12 * 3600
    # yesterday: 100 requests/s at this time, 300 an hour later; today 20 % busier so far
    samples = [(now - DAY_S + dt, 100.0) for dt in range(-600, 600, 60)]
    samples += [(now - DAY_S + 3600 + dt, 300.0) for dt in range(-600, 600, 60)]
    samples += [(now - dt, 120.0) for dt in range(0, 300, 30)]
    assert forecast_rate(samples, now, 3600) == pytest.approx(1.2 * 300)
    # a falling edge tomorrow does not plan below what is seen now
    falling = [(t, 300.0 if t < now - DAY_S + 1800 else 50.0) for t, _ in samples[:40]] + samples[40:]
    assert forecast_rate(falling, now, 3600) >= 120


def test_replicas_the_fewest_within_headroom_else_the_most_with_a_reason():
    plan = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=8,
                         best_steps_per_s=20, margin=0.2)
    assert not plan.reason and plan.steps_per_s <= UTILIZATION_TARGET * 20
    fewer = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=plan.replicas - 1,
                          best_steps_per_s=20, margin=0.2)
    assert fewer.replicas == plan.replicas - 1 and "even" in fewer.reason and fewer.steps_per_s <= 20
    # beyond every prediction the replicas are planned at the fastest speed, where a GPU takes them
    one = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=1,
                        best_steps_per_s=20, margin=0.2)
    assert one.steps_per_s == 20 and "planned at" in one.reason
    assert plan.rate_per_replica_rps == pytest.approx(400 * (1 + RATE_HEADROOM) / plan.replicas)
    unknown = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=2, max_replicas=8,
                            best_steps_per_s=None)
    assert unknown.replicas == 2 and "no GPU type" in unknown.reason
