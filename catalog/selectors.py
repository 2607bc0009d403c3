"""Reads of the catalog, shared by the API, services and the scheduler's problem builder."""
from collections.abc import Iterable

from django.db.models import OuterRef, QuerySet, Subquery

from .models import GpuType, Measurement, PredictionRecord, Workload


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


def latest_estimates_by_workload(*, names: Iterable[str], include_shadow: bool = False) -> dict[str, dict]:
    """The newest prediction's estimates for each named workload that has one: P1's at
    submission, replaced by each P2 refinement as telemetry arrives. Shadow-mode records count
    only when asked for (a shadow round plans with them; a live one does not)."""
    records = PredictionRecord.objects.filter(workload=OuterRef("pk"))
    if not include_shadow:
        records = records.filter(shadow=False)
    # Per workload, one walk down the prediction_newest index to its first match: a round's
    # read does not grow with the predictions P2 stored before (one per telemetry measurement).
    newest = Workload.objects.filter(name__in=set(names)).values(
        newest=Subquery(records.order_by("-id").values("id")[:1])
    )
    return dict(PredictionRecord.objects.filter(pk__in=newest).values_list("workload__name", "estimates"))

