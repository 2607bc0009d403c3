"""A job's throughput measured alone, at a power limit or at the default, read as a ratio to a
rate at the default that telemetry never changes: what corrects the power-limit model per
(workload, GPU type) (catalog.predictors.learnt_limits; docs/power_limits.md, "Limit curves
learnt from telemetry").

A throughput at a limit is (the rate at the default) x (the fraction), so the fraction can be
read only against a default-limit rate known without it. P2's estimate is not: it takes this very
measurement (brought back to the default by the fraction planned), and a fraction read against it
would give the planned fraction back, so the curve would never move. The reference is the
catalog's measurement of the configuration (reference or profiling data), else P1's estimate
(catalog.selectors.reference_rate); its own error is one factor per (workload, type), which the
rule learns beside the curve, pinned by the readings at the default. The rate is divided by the
board's learnt speed (telemetry.gpu_speed: learnt against the other boards in the same cell, so
it holds no curve), as `simulate` does: a slow or aged board's rate is not taken for its
workload's curve or its reference's error.
"""
from catalog.selectors import learnt_limits, reference_rate
from catalog.services.limit_observations import limit_observation_record
from telemetry.gpu_health import braked_now

from ..boards import learnt_speed
from ..models import Allocation, Job
from ..optimizer.power import PowerCurve


def reference_draw(gpu_type, known_w: float | None) -> float:
    """What a reading's power is read against: the workload's draw known without telemetry
    (`known_w`, catalog.selectors.reference_draws), else the type's power curve at full load (what
    a round plans a workload with before any power is measured). Fixed, as the rate's reference
    is: the catalog's mean power takes telemetry's measurements, each brought back to the default
    by the fraction learnt against it, and read against that mean the readings chase it (`simulate`
    learnt a 1015 W draw on a 225 W P100 so: docs/simulation.md)."""
    if known_w:
        return known_w
    return PowerCurve.from_points(gpu_type.power_curve, gpu_type.idle_w, gpu_type.tdp_w)(1.0)


def learnt_fractions(workload: str, gpu_type: str, model: tuple[float, float, float | None]) -> tuple[float, float]:
    """(speed, power) at a limit where the model says `model`, corrected by the workload's
    readings on the type, this measurement's included: what a measurement at the limit is
    brought back to the default by. Over the speed planned before it, P2 would take the
    reading's error and the curve part of it again, counting it twice at that limit."""
    return learnt_limits(names={workload}).at_power_limit(workload, gpu_type, model[:2])


def limit_observation_from(job: Job, allocations: list[Allocation], limit_w: float | None,
                           model: tuple[float, float, float | None], steps_per_s: float, power_w: float | None, *,
                           reference: str, now) -> None:
    """Record the reading of a job alone on one GPU at `limit_w` (None: the default; `model`: the
    model's speed and power fractions there and the workload's draw at the default as known
    without telemetry, W or None), where a reference rate is known; its power (`power_w`) over
    `reference_draw`. One GPU: the rule learns one error of the reference per (workload,
    type), and a multi-GPU configuration's reference errs apart (P1's scaling, not a measurement).
    The rate is read over the board's learnt speed. A ratio no limit could give (a stalled job, a
    wrong reference) is left out, and so is a board a brake holds back (its health: the brake, not
    the limit, sets the rate)."""
    if len(allocations) != 1 or allocations[0].partners.exists():
        return
    gpu = allocations[0].gpu
    if braked_now(gpu.health):
        return
    rate = reference_rate(workload=job.workload, gpu_type=gpu.gpu_type, num_gpus=1, consolidated=True)
    if not rate:
        return
    default_w = gpu.power_limit_default_w or gpu.gpu_type.tdp_w
    power = power_w / reference_draw(gpu.gpu_type, model[2]) if power_w else None
    try:
        limit_observation_record(
            workload=job.workload, gpu_type=gpu.gpu_type, limit_w=min(limit_w or default_w, default_w),
            default_w=default_w, speed_ratio=steps_per_s / learnt_speed(gpu) / rate, model_speed=model[0],
            power_ratio=power, model_power=model[1] if power is not None else None, reference=reference,
            observed_at=now,
        )
    except ValueError:
        pass  # left out: no rate a limit gives against its reference
