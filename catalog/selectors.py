"""Reads of the catalog, shared by the API, services and the scheduler's problem builder."""
from collections.abc import Iterable

from django.conf import settings
from django.db.models import F, Max, QuerySet, Window
from django.db.models.functions import RowNumber

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
    records = PredictionRecord.objects.filter(workload__name__in=set(names))
    if not include_shadow:
        records = records.filter(shadow=False)
    newest = (
        records
        .values("workload_id")
        .annotate(newest=Max("id"))
        .values("newest")
    )
    return dict(PredictionRecord.objects.filter(pk__in=newest).values_list("workload__name", "estimates"))


def peak_memory_by_workload(*, names: Iterable[str]) -> dict[str, float]:
    """GB per GPU each named workload was seen to use at its peak while running alone (a shared
    GPU's memory is both jobs'); workloads never seen are absent. Only the newest
    GOGH_PREDICTOR_WINDOW records of each configuration count, the catalog policy's window
    (records without a time count as oldest): a need that shrank, or one spurious high reading,
    stops holding the workload off GPUs it fits once that many newer records came in, instead
    of for good."""
    newest_first = Window(
        RowNumber(),
        partition_by=[F("workload_id"), F("gpu_type_id"), F("num_gpus"), F("consolidated")],
        order_by=[F("observed_at").desc(nulls_last=True), F("id").desc()],
    )
    recent = (
        Measurement.objects.filter(workload__name__in=set(names), partner__isnull=True)
        .annotate(recency=newest_first)
        .filter(recency__lte=settings.GOGH_PREDICTOR_WINDOW)
        .values_list("workload__name", "memory_gb")
    )
    peaks: dict[str, float] = {}
    for name, memory_gb in recent:  # the window counts every record, with a memory reading or not
        if memory_gb is not None:
            peaks[name] = max(peaks.get(name, memory_gb), memory_gb)
    return peaks
