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
    # calibration 2 is a replica twice as slow: 5 steps/s, 200 ms a batch, 40 requests/s served
    assert p99_ms(10, 20, 8, calibration=2) == pytest.approx(200 + 1000 * latency.LN_100 / 20)
    assert p99_ms(10, 40, 8, calibration=2) == math.inf  # its capacity, not only its batch time


def test_a_replica_slower_than_predicted_is_learnt_with_its_capacity():
    # simulate, seed 3: batches of 512, predicted 42 steps/s (21504 requests/s), truly 33.6 (17203)
    truly = p99_ms(33.6, 8000, 512)  # reported at a low load: 29.76 + 0.50 ms
    assert truly == pytest.approx(1000 / 33.6 + 1000 * latency.LN_100 / (33.6 * 512 - 8000))
    seen = latency.observed_calibration(42, 8000, 512, truly)
    assert seen == pytest.approx(1.25)
    # at 17000 requests/s the truth's P99 is 52.4 ms (29.76 + 4605 / 203), over a 50 ms bound; the model now says so
    assert p99_ms(33.6, 17000, 512) == pytest.approx(29.76 + 22.66, abs=0.01)
    assert p99_ms(42, 17000, 512, seen) == pytest.approx(p99_ms(33.6, 17000, 512))
    # read as an overhead on the P99 alone (the rule before), 1.25 x the P99 at 42 steps/s: 31 ms
    assert 1.25 * p99_ms(42, 17000, 512) == pytest.approx(31.04, abs=0.01)


def test_a_replica_that_cannot_keep_up_has_no_bounded_p99():
    assert p99_ms(10, 80, 8) == math.inf and p99_ms(10, 120, 8) == math.inf and p99_ms(0, 1, 8) == math.inf


@pytest.mark.parametrize("rate", [0.0, 5.0, 100.0, 2000.0])
@pytest.mark.parametrize("calibration", [0.5, 1.0, 3.0])
def test_the_required_speed_is_the_least_that_meets_the_target(rate, calibration):
    need = required_steps_per_s(rate, 50, 16, calibration, margin=0.2)
    target = target_ms(50, 0.2)
    assert p99_ms(need, rate, 16, calibration) <= target * (1 + 1e-9)
    assert p99_ms(need * 0.999, rate, 16, calibration) > target


def test_the_required_speed_scales_with_the_calibration():
    # c slows the replica: it needs c times the speed an uncalibrated one needs
    assert required_steps_per_s(300, 50, 16, 1.6, 0.2) == pytest.approx(1.6 * required_steps_per_s(300, 50, 16, 1, 0.2))


def test_the_margin_plans_under_the_bound():
    assert target_ms(60, 0.2) == pytest.approx(50) and target_ms(60, 0) == 60
    assert required_steps_per_s(100, 60, 16, margin=0.2) > required_steps_per_s(100, 60, 16, margin=0)


def test_the_unloaded_floor_is_what_a_bound_must_allow():
    assert unloaded_floor_ms(10, 8) == pytest.approx(100 + 1000 * latency.LN_100 / 80)


def test_calibration_follows_reports_within_bounds():
    predicted = p99_ms(10, 40, 8)
    assert calibrated(1.0, 10, 40, 8, predicted) == pytest.approx(1.0)
    assert calibrated(2.0, 10, 20, 8, p99_ms(10, 20, 8, 2.0)) == pytest.approx(2.0)
    # twice the P99 (430.3 ms) at 40 requests/s of 80: c = 1.428, 7.0 steps/s, 56.0 requests/s
    # served: 142.8 ms a batch + 4605 / 16.0 = 287.4 ms of queue
    seen = latency.observed_calibration(10, 40, 8, 2 * predicted)
    assert seen == pytest.approx(1.428, abs=1e-3) and p99_ms(10, 40, 8, seen) == pytest.approx(2 * predicted)
    assert calibrated(1.0, 10, 40, 8, 2 * predicted) == pytest.approx(0.7 + 0.3 * seen)
    assert calibrated(1.0, 10, 0, 8, 1e6) == pytest.approx(0.7 + 0.3 * latency.CALIBRATION_BOUNDS[1])
    assert calibrated(5.0, 10, 0, 8, 1e6) == latency.CALIBRATION_BOUNDS[1]
    assert calibrated(1.0, 10, 40, 8, 1e-6) == pytest.approx(0.7 + 0.3 * latency.CALIBRATION_BOUNDS[0])
    assert calibrated(1.3, 0, 40, 8, 50) == 1.3 and calibrated(1.3, 10, 40, 8, 0) == 1.3
    assert calibrated(1.3, 10, 40, 8, math.nan) == 1.3


def test_an_unbounded_p99_says_the_capacity_is_at_most_the_load():
    # 10 steps/s of 8 (80 requests/s) receiving 50 and not keeping up: c >= 80 / 50
    assert latency.observed_calibration(10, 50, 8, math.inf) == pytest.approx(1.6)
    assert calibrated(1.0, 10, 50, 8, math.inf) == pytest.approx(0.7 + 0.3 * 1.6)
    assert latency.observed_calibration(10, 10, 8, math.inf) == latency.CALIBRATION_BOUNDS[1]


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
