"""Writes of limit observations: a running job's reading at its power limit (docs/power_limits.md,
"Limit curves learnt from telemetry"), made by the scheduler's dispatch."""
from ..models import GpuType, LimitObservation, Workload


def limit_observation_record(*, workload: Workload, gpu_type: GpuType, limit_w: float, default_w: float,
                             speed_ratio: float, model_speed: float, power_ratio: float | None = None,
                             model_power: float | None = None, reference: str, observed_at) -> LimitObservation:
    """Store one reading. ValueError naming the field, nothing stored, for a ratio or model
    fraction out of range (learnt_limits.LimitReading's rule) or a limit that is not in
    (0, default_w]."""
    # Imported here: catalog.predictors loads the predictor networks' libraries.
    from ..predictors.learnt_limits import LimitReading

    LimitReading(model_speed=model_speed, speed=speed_ratio, model_power=model_power, power=power_ratio)
    if not 0 < limit_w <= default_w:
        raise ValueError(f"limit_w must be in (0, {default_w:g}], got {limit_w!r}")
    return LimitObservation.objects.create(
        workload=workload, gpu_type=gpu_type, limit_w=limit_w, default_w=default_w, speed_ratio=speed_ratio,
        model_speed=model_speed, power_ratio=power_ratio, model_power=model_power, reference=reference,
        observed_at=observed_at,
    )
