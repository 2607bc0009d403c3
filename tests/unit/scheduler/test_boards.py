"""The problem a round solves carries each board's learnt speed, flag and fitted power curve,
and each type's curve is the mean of its boards' (scheduler.boards, docs/gpu_health.md)."""
import pytest
from django.utils import timezone

from scheduler.models import SolverConfig
from scheduler.problem_source import problem_from_database
from telemetry.models import Gpu, GpuPowerCurve


def fit(gpu, points, limit=None):
    GpuPowerCurve.objects.create(gpu=gpu, points=points, residual_std_w=3.0, samples=1000, power_limit_w=limit,
                                 fitted_at=timezone.now())


def test_new_boards_are_planned_as_their_datasheet(cluster):
    problem = problem_from_database(SolverConfig.load())
    assert all(g.speed == 1.0 and not g.slow and g.power_curve is None for g in problem.gpus)
    assert problem.gpu_types["v100"].power_curve.points == ((0.0, 35.0), (1.0, 300.0))


def test_boards_carry_their_speed_flag_and_curve_and_the_type_their_mean(cluster):
    v0, v1 = cluster[0], cluster[1]
    Gpu.objects.filter(pk=v0.pk).update(speed_factor=0.88, speed_observations=12, speed_flag="runs at 88 %")
    Gpu.objects.filter(pk=v1.pk).update(speed_factor=0.5, speed_observations=2)  # too few to plan with
    fit(v0, [[0.0, 55.0], [0.5, 155.0], [1.0, 280.0]])
    fit(v1, [[0.0, 10.0], [1.0, 100.0]], limit=150.0)  # at a lower limit: not the default curve
    problem = problem_from_database(SolverConfig.load())
    by_id = {g.id: g for g in problem.gpus}
    assert (by_id[str(v0.pk)].speed, by_id[str(v0.pk)].slow) == (0.88, True)
    assert by_id[str(v0.pk)].power_curve.points == ((0.0, 55.0), (0.5, 155.0), (1.0, 280.0))
    assert (by_id[str(v1.pk)].speed, by_id[str(v1.pk)].slow, by_id[str(v1.pk)].power_curve) == (1.0, False, None)
    # Four V100s: one fitted, three on the datasheet line 35 -> 300 W.
    curve = problem.gpu_types["v100"].power_curve
    assert [u for u, _ in curve.points] == [0.0, 0.5, 1.0]
    assert curve(0.0) == pytest.approx((55 + 3 * 35) / 4)
    assert curve(0.5) == pytest.approx((155 + 3 * 167.5) / 4)
    assert curve(1.0) == pytest.approx((280 + 3 * 300) / 4)
    assert problem.gpu_types["k80"].power_curve.points == ((0.0, 25.0), (1.0, 150.0))


def test_a_boards_health_turns_it_slow_before_any_job_measured_it(cluster):
    """At risk: planned like a flagged board at its learnt speed; braked for the sustained time:
    planned at its clock ratio too. Neither needs a measurement."""
    v0, v1, v2 = cluster[0], cluster[1], cluster[2]
    Gpu.objects.filter(pk=v0.pk).update(health={"at_risk": "remapped rows rose from 2 to 9"})
    Gpu.objects.filter(pk=v1.pk).update(health={"throttle_reasons": ["hardware slowdown"], "throttled_speed": 0.6})
    Gpu.objects.filter(pk=v2.pk).update(health={"throttle_reasons": ["hardware slowdown"],
                                                "braked_since": timezone.now().isoformat()})  # not yet sustained
    by_id = {g.id: g for g in problem_from_database(SolverConfig.load()).gpus}
    assert (by_id[str(v0.pk)].speed, by_id[str(v0.pk)].slow, by_id[str(v0.pk)].at_risk) == (1.0, True, True)
    assert (by_id[str(v1.pk)].speed, by_id[str(v1.pk)].slow, by_id[str(v1.pk)].at_risk) == (0.6, True, False)
    assert (by_id[str(v2.pk)].speed, by_id[str(v2.pk)].slow, by_id[str(v2.pk)].at_risk) == (1.0, False, False)


def test_a_throttled_board_is_planned_at_the_lower_of_its_learnt_and_clock_speeds(cluster):
    v0, v1 = cluster[0], cluster[1]
    Gpu.objects.filter(pk=v0.pk).update(speed_factor=0.7, speed_observations=9, health={"throttled_speed": 0.9,
                                                                                       "throttle_reasons": []})
    Gpu.objects.filter(pk=v1.pk).update(speed_factor=0.95, speed_observations=9, health={"throttled_speed": 0.8,
                                                                                        "throttle_reasons": []})
    by_id = {g.id: g for g in problem_from_database(SolverConfig.load()).gpus}
    assert by_id[str(v0.pk)].speed == 0.7 and by_id[str(v1.pk)].speed == 0.8
