"""Writes of workloads through the API (the reference load creates Gavel's own)."""
from django.db import transaction

from ..models import Workload
from .common import assign, protected_delete, validated_save


@transaction.atomic
def workload_create(**fields) -> Workload:
    return validated_save(Workload(**fields))


@transaction.atomic
def workload_update(*, workload: Workload, data: dict) -> Workload:
    return validated_save(assign(workload, data))


@transaction.atomic
def workload_delete(*, workload: Workload) -> None:
    """Deletes the workload's measurements with it; refused while jobs refer to it."""
    protected_delete(workload, what=f"Workload {workload.name}")
