"""Writes of GPU types (operators' edits through the API; the reference load has its own)."""
from django.db import transaction

from ..models import GpuType
from .common import assign, protected_delete, validated_save


@transaction.atomic
def gpu_type_create(**fields) -> GpuType:
    return validated_save(GpuType(**fields))


@transaction.atomic
def gpu_type_update(*, gpu_type: GpuType, data: dict) -> GpuType:
    return validated_save(assign(gpu_type, data))


@transaction.atomic
def gpu_type_delete(*, gpu_type: GpuType) -> None:
    """Refused while measurements or GPUs of the cluster refer to the type."""
    protected_delete(gpu_type, what=f"GPU type {gpu_type.name}")
