"""The latency model, its inverse and calibration, the forecast and the replica plan (pure)."""
import math
import random

import pytest

from scheduler.optimizer.problem import SolverSettings
from scheduler.serving import latency
from scheduler.serving.forecast import DAY_S, NOW_WINDOW_S, SCALE_DOWN_WAIT_S, current_rate, forecast_rate, held_rate
from scheduler.serving.latency import Calibration, p99_ms, required_steps_per_s, target_ms, unloaded_floor_ms
from scheduler.serving.replicas import RATE_HEADROOM, UTILIZATION_TARGET, plan_replicas, surest_single_gpu


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


def test_a_light_report_teaches_the_batch_time_not_the_speed():
    # No load: the P99 is one batch's time, c/f alone; the slope of ln P99 in ln f is 0. The
    # Kalman gain on ln(c/f) is var_u / (var_u + noise) with var_u = 0.09 + 0.001 drift and
    # noise 0.07^2: 0.091 / 0.0959; on ln f it is the covariance, 0.
    before = Calibration()
    after = before.learnt(10, 0.0, 8, 2 * before.p99_ms(10, 0.0, 8))
    assert after.speed == 1.0
    assert after.latency == pytest.approx(math.exp(0.091 / 0.0959 * math.log(2)))
    assert after.spread[0] == pytest.approx(0.091 - 0.091 ** 2 / 0.0959)


def test_a_report_the_model_predicted_moves_nothing_but_narrows_the_spread():
    before = Calibration(1.2, 0.9)
    after = before.learnt(10, 60.0, 8, before.p99_ms(10, 60.0, 8))
    assert (after.latency, after.speed) == pytest.approx((1.2, 0.9))
    assert after.spread[0] < before.spread[0] and after.spread[2] < before.spread[2] + 0.0002


def test_a_loaded_report_once_the_batch_time_is_known_teaches_the_speed():
    # 10 steps/s of batch 8 predicted; at 60 requests/s the queue is most of the P99 (slope 2.27).
    known = Calibration(1.0, 1.0, (0.001, 0.0, 0.0225))
    truth = p99_ms(0.9 * 10, 60.0, 8)  # the replica is truly 10 % slower
    after = known.learnt(10, 60.0, 8, truth)
    assert after.speed < 0.97 and after.latency / after.speed == pytest.approx(1.0, abs=0.02)


def test_a_replica_that_could_not_keep_up_lowers_the_learnt_capacity_below_the_load():
    # predicted capacity 10 x 8 = 80 requests/s; it could not keep up with 60: f <= 0.75.
    before = Calibration(1.5, 1.0)
    after = before.learnt(10, 60.0, 8, math.inf)
    assert after.speed == pytest.approx(math.sqrt(1.0 * 0.75 * 0.98))
    assert after.latency / after.speed == pytest.approx(1.5)  # the batch time stays what was learnt
    again = after.learnt(10, 60.0, 8, math.inf)
    assert 0.75 * 0.98 < again.speed < after.speed
    # already below the load: nothing to learn
    assert Calibration(1.0, 0.7).learnt(10, 60.0, 8, math.inf).speed == 0.7


def test_a_replica_that_kept_up_where_the_model_said_it_could_not_raises_the_capacity():
    after = Calibration(1.0, 0.7).learnt(10, 60.0, 8, 500.0)
    assert after.speed == pytest.approx(0.75 / 0.98) and after.latency == pytest.approx(after.speed / 0.7)


@pytest.mark.parametrize("truth", [(1.122, 0.74), (1.28, 1.0), (0.9, 1.15)])
def test_reports_at_the_days_loads_recover_both_factors(truth):
    # seed 3's recommendation service (overhead 1.122, 0.74 of its predicted speed), an overhead
    # alone (the kind a single factor read as slowness over-provisioned), and a faster replica;
    # reports at loads from 20 to 95 % of the true capacity, with 5 % noise.
    latency_c, speed_f = truth
    rng = random.Random(1)
    cal = Calibration()
    for _ in range(300):
        load = rng.uniform(0.2, 0.95) * speed_f * 45 * 512
        cal = cal.learnt(45, load, 512, p99_ms(speed_f * 45, load, 512, latency_c) * (1 + rng.gauss(0, 0.05)))
    assert cal.speed == pytest.approx(speed_f, rel=0.05) and cal.latency == pytest.approx(latency_c, rel=0.05)


def test_the_learnt_factors_stay_within_bounds_and_a_report_without_figures_changes_nothing():
    cal = Calibration()
    for _ in range(50):
        cal = cal.learnt(10, 0.0, 8, 1e6)
    assert cal.latency == latency.CALIBRATION_BOUNDS[1]
    for _ in range(50):
        cal = cal.learnt(10, 79.0, 8, math.inf)
    assert cal.speed >= latency.SPEED_BOUNDS[0]
    start = Calibration(1.3, 0.9)
    assert start.learnt(0, 10.0, 8, 50.0) is start and start.learnt(10, 10.0, 8, 0.0) is start
    assert start.learnt(10, 10.0, 8, math.nan) is start


def test_the_t_min_is_in_predicted_steps_what_the_replica_truly_needs_over_its_speed():
    cal = Calibration(1.2, 0.8)
    expected = required_steps_per_s(100, 60, 16, 1.2, 0.2) / 0.8
    assert cal.required_steps_per_s(100, 60, 16, 0.2) == pytest.approx(expected)
    assert cal.p99_ms(10, 40, 8) == pytest.approx(p99_ms(8, 40, 8, 1.2))


def test_forecast_without_history_is_the_rate_now():
    samples = [(1000.0 - s, 40.0) for s in range(0, 300, 30)]
    assert forecast_rate(samples, 1000.0, 600) == pytest.approx(40)
    assert forecast_rate([], 1000.0, 600) == 0


def test_the_held_rate_falls_only_once_the_rate_stayed_lower_for_the_wait():
    now = 10_000.0
    samples = [(now - s, 120.0 if s > 200 else 40.0) for s in range(0, 900, 30)]  # 120 until 200 s ago, then 40
    assert forecast_rate(samples, now, 600) == pytest.approx(current_rate(samples, now))
    assert current_rate(samples, now) < 70
    assert held_rate(samples, now) == pytest.approx(120)  # 5 minutes ago "now" was 120
    later = now + SCALE_DOWN_WAIT_S + NOW_WINDOW_S
    samples += [(later - s, 40.0) for s in range(0, int(later - now), 30)]
    assert held_rate(samples, later) == pytest.approx(40)  # lower for the whole wait
    rising = [(now - s, 40.0 if s > 60 else 200.0) for s in range(0, 900, 30)]
    assert held_rate(rising, now) == pytest.approx(current_rate(rising, now))
    assert current_rate(rising, now) > 40


def test_a_held_rate_keeps_its_replicas_each_at_the_t_min_of_the_rate_now():
    args = {"bound_ms": 100, "batch_size": 16, "min_replicas": 1, "max_replicas": 8, "best_steps_per_s": 20,
            "margin": 0.2}
    busy, quiet = plan_replicas(rate_rps=400, **args), plan_replicas(rate_rps=100, **args)
    assert busy.replicas > quiet.replicas
    held = plan_replicas(rate_rps=100, hold_rps=400, **args)
    assert held.replicas == busy.replicas and held.rate_per_replica_rps == pytest.approx(100 * 1.2 / busy.replicas)
    assert held.steps_per_s < quiet.steps_per_s
    assert plan_replicas(rate_rps=400, hold_rps=100, **args) == busy  # a lower held rate changes nothing


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
    assert fewer.replicas == plan.replicas - 1 and "even" in fewer.reason and fewer.steps_per_s <= 17
    # beyond every prediction the replicas are planned at 85 % of the fastest speed, where a GPU takes them
    one = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=1,
                        best_steps_per_s=20, margin=0.2)
    assert one.steps_per_s == pytest.approx(UTILIZATION_TARGET * 20) and "planned at 17.00" in one.reason
    assert plan.rate_per_replica_rps == pytest.approx(400 * (1 + RATE_HEADROOM) / plan.replicas)
    # replicas learnt 3 % slower than predicted: their T_min in predicted steps/s is what they truly
    # need over 0.97, so more of them are planned
    slower = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=8,
                           best_steps_per_s=20, margin=0.2, speed_factor=0.97)
    assert slower.replicas > plan.replicas and not slower.reason
    per = 400 * (1 + RATE_HEADROOM) / slower.replicas
    assert slower.steps_per_s == pytest.approx(required_steps_per_s(per, 100, 16, margin=0.2) / 0.97)
    unknown = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=2, max_replicas=8,
                            best_steps_per_s=None)
    assert unknown.replicas == 2 and "no GPU type" in unknown.reason


class _Predictions:
    """20 steps/s on a V100 the workload never ran on (log sd 0.5), 15 measured on a P100."""

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return {"v100": 20.0, "p100": 15.0}.get(gpu_type)

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated):
        return (0.5, False) if gpu_type == "v100" else (0.0, True)


def test_an_impossible_plan_caps_its_t_min_at_the_speed_a_gpu_is_counted_on_to_give():
    # the optimiser counts on exp(-1 x 0.5) = 61 % of the unmeasured V100's 20 steps/s: 12.1; the
    # measured P100's 15 is the most a replica may count on, so an impossible plan asks for 85 % of it.
    sure = surest_single_gpu(_Predictions(), "w", ["v100", "p100", "k80"], SolverSettings(unmeasured_margin_z=1.0))
    assert sure == 15.0
    assert surest_single_gpu(_Predictions(), "w", ["v100"], SolverSettings(unmeasured_margin_z=1.0)) == pytest.approx(
        20 * math.exp(-0.5)
    )
    assert surest_single_gpu(_Predictions(), "w", ["v100"], SolverSettings(unmeasured_margin_z=0.0)) == 20.0
    assert surest_single_gpu(_Predictions(), "w", ["k80"], SolverSettings()) is None
    one = plan_replicas(rate_rps=400, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=1,
                        best_steps_per_s=20, margin=0.2, cap_steps_per_s=sure)
    assert one.steps_per_s == pytest.approx(UTILIZATION_TARGET * 15) and "planned at 12.75" in one.reason
    # a plan within the fastest prediction's headroom is not capped (only the impossible one is)
    easy = plan_replicas(rate_rps=40, bound_ms=100, batch_size=16, min_replicas=1, max_replicas=1,
                         best_steps_per_s=20, margin=0.2, cap_steps_per_s=sure)
    assert not easy.reason and easy.steps_per_s == pytest.approx(required_steps_per_s(48, 100, 16, margin=0.2))
