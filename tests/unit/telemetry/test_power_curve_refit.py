"""Each GPU's power curve refitted from its raw samples into GpuPowerCurve (the beat task)."""
import random
from datetime import UTC, datetime, timedelta

import pytest

from telemetry import tasks
from telemetry.models import GpuPowerCurve, GpuSample
from telemetry.services import gpu_power_curves_refit

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def samples(gpu, n, *, lo=0.0, hi=1.0, start=NOW - timedelta(hours=1), bad=0):
    rng = random.Random(gpu.pk)
    rows = [GpuSample(gpu=gpu, ts=start + timedelta(seconds=i), utilization=(u := rng.uniform(lo, hi)),
                      power_w=40 + 220 * u + rng.gauss(0, 4)) for i in range(n)]
    rows += [GpuSample(gpu=gpu, ts=start + timedelta(seconds=n + i), utilization=0.5, power_w=9999) for i in range(bad)]
    GpuSample.objects.bulk_create(rows)


def test_a_gpu_with_enough_spread_gets_its_curve(gpus):
    samples(gpus[0], 1200, bad=7)
    assert gpu_power_curves_refit(window_s=6 * 3600, now=NOW) == {"fitted": 1, "refused": 0}
    curve = GpuPowerCurve.objects.get(gpu=gpus[0])
    assert curve.samples == 1200 and curve.fitted_at == NOW and curve.power_limit_w is None
    assert curve.residual_std_w == pytest.approx(4, rel=0.2)
    for u, w in curve.points:
        assert w == pytest.approx(40 + 220 * u, abs=4)


def test_a_refused_fit_writes_nothing_and_keeps_the_curve_it_had(gpus):
    samples(gpus[0], 1200)
    gpu_power_curves_refit(window_s=6 * 3600, now=NOW)
    before = GpuPowerCurve.objects.get(gpu=gpus[0])
    samples(gpus[0], 900, lo=0.95, hi=0.99, start=NOW + timedelta(hours=2))  # later: flat out only
    samples(gpus[1], 100, start=NOW + timedelta(hours=2))  # too few
    later = NOW + timedelta(hours=2, minutes=30)
    assert gpu_power_curves_refit(window_s=1800, now=later) == {"fitted": 0, "refused": 2}
    assert list(GpuPowerCurve.objects.values_list("gpu_id", "fitted_at", "points")) == [
        (gpus[0].pk, NOW, before.points)
    ]


def test_samples_outside_the_window_are_not_fitted(gpus):
    samples(gpus[0], 1200, start=NOW - timedelta(hours=8))
    assert gpu_power_curves_refit(window_s=6 * 3600, now=NOW) == {"fitted": 0, "refused": 0}
    assert not GpuPowerCurve.objects.exists()


def test_a_curve_is_labelled_with_a_non_default_limit_in_force(gpus):
    gpu = gpus[0]
    gpu.power_limit_w, gpu.power_limit_default_w = 200.0, 300.0
    gpu.save()
    samples(gpu, 1200)
    gpu_power_curves_refit(window_s=6 * 3600, now=NOW)
    assert GpuPowerCurve.objects.get(gpu=gpu).power_limit_w == 200.0


def test_the_beat_task_refits_with_the_configured_window(gpus, settings):
    settings.GOGH_POWER_CURVE_WINDOW_S = 3600
    samples(gpus[0], 1200, start=datetime.now(UTC) - timedelta(minutes=30))
    assert tasks.gpu_power_curves_refit() == {"fitted": 1, "refused": 0}
    assert settings.CELERY_BEAT_SCHEDULE["refit-gpu-power-curves"]["task"] == "telemetry.tasks.gpu_power_curves_refit"
