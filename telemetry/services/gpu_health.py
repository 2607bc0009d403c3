"""An operator's action on a GPU's health (docs/gpu_health.md): clearing its at-risk flag."""
from django.db import transaction
from django.utils import timezone

from .. import live
from ..gpu_health import cleared
from ..models import Gpu


class NotAtRisk(ValueError):
    """gpu_at_risk_clear on a GPU whose health does not say at risk."""


@transaction.atomic
def gpu_at_risk_clear(*, gpu: Gpu, by) -> Gpu:
    """Clear a GPU's at-risk flag (the board was serviced, or the rise is understood): its current
    error counts become its baseline and a failing XID is forgotten, so the plan uses it as any
    board again until its counts rise anew. A GPU that is not at risk is refused (NotAtRisk),
    nothing written."""
    gpu = Gpu.objects.select_for_update().get(pk=gpu.pk)
    if not gpu.health.get("at_risk"):
        raise NotAtRisk(f"GPU {gpu.uuid} is not at risk: there is nothing to clear.")
    gpu.health = cleared(gpu.health, by=by.get_username(), at=timezone.now())
    gpu.save(update_fields=["health"])
    live.gpus_changed([gpu.pk])
    return gpu
