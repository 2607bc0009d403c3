"""Reads of the catalog, shared by the API, services and the scheduler's problem builder."""
from collections.abc import Iterable

from django.db.models import Avg, OuterRef, QuerySet, Subquery

from .models import GpuType, LimitObservation, Measurement, MeasurementSource, PredictionRecord, Workload


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



#: Readings per (workload, GPU type) a learnt limit curve rests on: the newest, so that a curve
#: follows the workload as it changes (as the catalog's window does for its measurements).
LIMIT_WINDOW = 200


def learnt_limits(*, names: Iterable[str]):
    """The workloads' limit observations, the newest LIMIT_WINDOW per GPU type, as the learnt
    corrections of the power-limit model (catalog.predictors.learnt_limits.LearntLimits)."""
    # Imported here: catalog.predictors loads the predictor networks' libraries.
    from .predictors.learnt_limits import LearntLimits, LimitReading

    rows = (LimitObservation.objects.filter(workload__name__in=set(names))
            .order_by("-observed_at", "-id")
            .values_list("workload__name", "gpu_type__name", "model_speed", "speed_ratio", "model_power",
                         "power_ratio"))
    kept: dict[tuple[str, str], int] = {}
    readings = []
    for workload, gpu_type, model_speed, speed, model_power, power in rows:
        if kept.get((workload, gpu_type), 0) < LIMIT_WINDOW:
            kept[(workload, gpu_type)] = kept.get((workload, gpu_type), 0) + 1
            readings.append((workload, gpu_type, LimitReading(model_speed, speed, model_power, power)))
    return LearntLimits(reversed(readings))


def reference_draws(*, names: Iterable[str]) -> dict[tuple[str, str], float]:
    """{(workload, GPU type): its draw alone on one GPU at the default limit as known without
    telemetry}: the mean power of the catalog's reference and profiling measurements there, for
    the workloads `names`. What the power-limit model takes as a job's draw and what a limit
    observation's power is read against (docs/power_limits.md): the catalog's mean takes
    telemetry's measurements too, and a reference that moved with them would make the readings
    chase it."""
    rows = (Measurement.objects.filter(workload__name__in=set(names), num_gpus=1, partner__isnull=True,
                                       source__in=(MeasurementSource.REFERENCE, MeasurementSource.PROFILING),
                                       throughput__gt=0, power_w__gt=0)
            .values_list("workload__name", "gpu_type__name").annotate(mean=Avg("power_w")).order_by())
    return {(workload, gpu_type): mean for workload, gpu_type, mean in rows}


def reference_rate(*, workload: Workload, gpu_type: GpuType, num_gpus: int, consolidated: bool) -> float | None:
    """The workload's throughput alone in a configuration at the default limit as known without
    telemetry: the mean of the catalog's reference and profiling measurements there, else its
    newest P1 estimate (a prediction record that folded in no observation); None where neither
    speaks. What a limit observation is read against (docs/power_limits.md)."""
    measured = (Measurement.objects.filter(workload=workload, gpu_type=gpu_type, num_gpus=num_gpus,
                                           consolidated=consolidated, partner__isnull=True,
                                           source__in=(MeasurementSource.REFERENCE, MeasurementSource.PROFILING),
                                           throughput__gt=0)
                .values_list("throughput", flat=True))
    if measured:
        return sum(measured) / len(measured)
    for record in PredictionRecord.objects.filter(workload=workload, shadow=False).order_by("-id")[:20]:
        if record.observations:
            continue
        estimates = record.estimates
        for (name, k, together), tau in zip(estimates.get("configs", ()), estimates.get("tau", ())):
            if (name, int(k), bool(together)) == (gpu_type.name, num_gpus, consolidated or num_gpus == 1) and tau > 0:
                return float(tau)
        return None
    return None
