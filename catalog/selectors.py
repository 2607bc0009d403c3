"""Reads of the catalog, shared by the API, services and (later) the predictors."""
from collections.abc import Iterable

from django.db.models import QuerySet

from .models import GpuType, Measurement, Workload


def gpu_type_list() -> QuerySet[GpuType]:
    return GpuType.objects.all()


def workload_list() -> QuerySet[Workload]:
    return Workload.objects.all()


def measurement_list() -> QuerySet[Measurement]:
    """Measurements with their workload, GPU type and partner fetched in the same query."""
    return Measurement.objects.select_related("workload", "gpu_type", "partner")


def gpu_types_by_name(*, names: Iterable[str]) -> dict[str, GpuType]:
    return {t.name: t for t in GpuType.objects.filter(name__in=set(names))}


def workloads_by_name(*, names: Iterable[str]) -> dict[str, Workload]:
    return {w.name: w for w in Workload.objects.filter(name__in=set(names))}
