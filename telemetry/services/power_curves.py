"""Writes of each GPU's own power curve (GpuPowerCurve), refitted from its recent raw samples.

Run by Celery beat (telemetry.tasks.gpu_power_curves_refit). A GPU whose samples do not support
a fit (telemetry.power_curve_fit: too few, or too narrow a spread of utilization) keeps the curve
it had, or none: a refusal writes nothing.

Samples do not carry the power limit in force when they were read, so a curve is labelled with
the limit the GPU reports now (Gpu.power_limit_w; None where that is its default or unknown).
That is an approximation: a limit changed within the window mixes samples of both limits into
one fit (docs/gpu_health.md). The window is kept short for that reason.
"""
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..models import Gpu, GpuPowerCurve, GpuSample
from ..power_curve_fit import CurveFit, fit_power_curve

#: At most this many of a GPU's newest samples feed one fit (six hours at 1 Hz).
MAX_FIT_SAMPLES = 6 * 3600


def gpu_power_curves_refit(*, window_s: float, now=None) -> dict[str, int]:
    """Refit the curve of every GPU with raw samples in the last `window_s`; how many were
    fitted and refused. Each GPU is written in its own transaction."""
    now = now or timezone.now()
    since = now - timedelta(seconds=window_s)
    gpu_ids = GpuSample.objects.filter(ts__gte=since).values_list("gpu_id", flat=True).distinct().order_by()
    counts = {"fitted": 0, "refused": 0}
    for gpu in Gpu.objects.filter(pk__in=list(gpu_ids)).select_related("gpu_type"):
        counts["fitted" if gpu_power_curve_refit(gpu=gpu, since=since, now=now) else "refused"] += 1
    return counts


@transaction.atomic
def gpu_power_curve_refit(*, gpu: Gpu, since, now) -> bool:
    """Refit one GPU's curve from its samples since `since`; False (nothing written) when refused."""
    samples = (
        GpuSample.objects.filter(gpu=gpu, ts__gte=since, power_w__isnull=False, utilization__isnull=False)
        .order_by("-ts").values_list("utilization", "power_w")[:MAX_FIT_SAMPLES]
    )
    fit = fit_power_curve(samples, gpu.gpu_type.tdp_w)
    if not isinstance(fit, CurveFit):
        return False
    GpuPowerCurve.objects.update_or_create(
        gpu=gpu,
        defaults={
            "points": [list(p) for p in fit.points], "residual_std_w": fit.residual_std_w,
            "samples": fit.samples, "power_limit_w": limit_in_force(gpu), "fitted_at": now,
        },
    )
    return True


def limit_in_force(gpu: Gpu) -> float | None:
    """The GPU's limit where it is not its default (None: the default, or nothing reported)."""
    if gpu.power_limit_w is None or gpu.power_limit_w == gpu.power_limit_default_w:
        return None
    return gpu.power_limit_w
