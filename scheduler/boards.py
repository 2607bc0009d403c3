"""Each board as the optimiser sees it: its own speed and power curve (docs/gpu_health.md).

telemetry learns a board's speed (Gpu.speed_*) and fits its power curve (GpuPowerCurve); here
they become GpuSpec.speed, GpuSpec.slow, GpuSpec.at_risk and GpuSpec.power_curve. The aggregated model prices a
GPU type with one curve, so the type's curve becomes the pointwise mean of its boards' curves
(each board's fitted curve where it has one, the datasheet's otherwise). Only curves fitted at
the board's default power limit are used: the power at a lower limit is the predictions' part
(Predictions.at_power_limit, docs/power_limits.md), as a fraction of the default-limit power.
A speed learnt from fewer than telemetry.gpu_speed.MIN_OBSERVATIONS measurements is too noisy
to plan with: such a board is planned at 1.0 (planned_speed, simulate's rule too). A board's
health (telemetry.gpu_health.board_plan) lowers its speed at once while it is braked, and plans
it like a flagged board while it is at risk or braked, before its jobs' measurements could show it.
"""
from dataclasses import replace

from telemetry.gpu_health import board_plan
from telemetry.gpu_speed import planned_speed
from telemetry.models import Gpu, GpuPowerCurve

from .optimizer import GpuSpec, GpuTypeSpec, PowerCurve


def with_boards(
    gpus: list[Gpu], specs: tuple[GpuSpec, ...], types: dict[str, GpuTypeSpec]
) -> tuple[tuple[GpuSpec, ...], dict[str, GpuTypeSpec]]:
    """The specs with each board's speed, flag and fitted curve, and the types with their
    boards' mean curve. `gpus` are the rows `specs` were built from, in the same order."""
    curves = {
        gpu_id: PowerCurve(tuple((float(u), float(w)) for u, w in points))
        for gpu_id, points in GpuPowerCurve.objects.filter(
            gpu_id__in=[g.pk for g in gpus], power_limit_w__isnull=True
        ).values_list("gpu_id", "points")
    }
    specs = tuple(
        replace(spec, **board_speed(gpu), power_curve=curves.get(gpu.pk)) for gpu, spec in zip(gpus, specs)
    )
    return specs, {name: replace(t, power_curve=mean_curve(t, specs)) for name, t in types.items()}


def board_speed(gpu: Gpu) -> dict:
    """{speed, slow, at_risk} of a board by telemetry.gpu_health.board_plan, from its learnt speed,
    the tracker's flag and its health."""
    return board_plan(learnt_speed(gpu), bool(gpu.speed_flag), gpu.health)._asdict()


def learnt_speed(gpu: Gpu) -> float:
    """The board's speed learnt from its jobs as the round plans it (planned_speed): what a limit
    reading on it is divided by too (dispatch.limit_observations)."""
    return planned_speed(gpu.speed_factor, gpu.speed_observations)


def mean_curve(gpu_type: GpuTypeSpec, specs) -> PowerCurve:
    """The pointwise mean of the type's boards' curves (fitted, else the datasheet's), at every
    utilization any of them has a point at; the datasheet's alone where no board has a fit."""
    curves = [s.power_curve or gpu_type.power_curve for s in specs if s.gpu_type == gpu_type.name]
    if all(c is gpu_type.power_curve for c in curves):
        return gpu_type.power_curve
    knots = sorted({u for c in curves for u, _ in c.points})
    return PowerCurve(tuple((u, sum(c(u) for c in curves) / len(curves)) for u in knots))
