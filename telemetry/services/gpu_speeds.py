"""Writes of each GPU's learnt speed (Gpu.speed_*), from a SpeedTracker the scheduler fed.

The scheduler owns what a job measured and what its round predicted; telemetry owns the GPU.
So the scheduler replays the measurements through telemetry.gpu_speed.SpeedTracker
(scheduler.gpu_speed_learning) and hands the tracker here, which writes what it learnt about
each GPU it saw. A flag keeps the instant it was first raised (speed_flagged_at) while it
stands, and clears with it.
"""
import math

from django.db import transaction
from django.utils import timezone

from .. import live
from ..gpu_speed import SpeedTracker
from ..models import Gpu


@transaction.atomic
def gpu_speeds_write(*, tracker: SpeedTracker, gpu_ids, now=None) -> int:
    """Write the tracker's speed and flag of each GPU in `gpu_ids` (those it observed); how many
    rows changed. GPUs not named keep what they have."""
    now = now or timezone.now()
    changed = []
    for gpu in Gpu.objects.select_for_update().filter(pk__in=list(gpu_ids)):
        speed, flag = tracker.speed(str(gpu.pk)), tracker.flag(str(gpu.pk)) or ""
        values = {
            "speed_factor": speed.factor,
            "speed_factor_std": speed.std if math.isfinite(speed.std) else None,
            "speed_observations": speed.observations,
            "speed_flag": flag,
            "speed_flagged_at": (gpu.speed_flagged_at or now) if flag else None,
        }
        if any(getattr(gpu, field) != value for field, value in values.items()):
            for field, value in values.items():
                setattr(gpu, field, value)
            changed.append(gpu)
    Gpu.objects.bulk_update(changed, ["speed_factor", "speed_factor_std", "speed_observations", "speed_flag",
                                      "speed_flagged_at"])
    live.gpus_changed({gpu.pk for gpu in changed})
    return len(changed)
