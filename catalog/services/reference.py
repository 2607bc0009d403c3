"""The catalog's reference seed: GPU type defaults, Gavel's workloads and measured throughputs.

Idempotent, so `load_reference_catalog` can run on every deploy:
- GPU types and workloads are created when missing and never changed afterwards: an operator
  who corrected a TDP or described a workload keeps the correction.
- Reference measurements are identified by their natural key (workload, GPU type, num_gpus,
  consolidated, partner) among source=reference rows; they hold published numbers, so a row
  that differs from the file is set back to the file's values, and missing rows are created.
  Other rows (profiling, telemetry, shadow) are never touched.
Rows are compared in memory and new ones written in bulk: a first load takes about 2 s on
SQLite, a reload that changes nothing well under 1 s.
"""
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction

from ..gavel import FAMILY_DESCRIPTIONS, GAVEL_COMMIT, GAVEL_THROUGHPUTS, GavelRecord, GavelWorkload, read_throughputs
from ..gpu_type_defaults import GPU_TYPE_DEFAULTS
from ..models import GpuType, Measurement, MeasurementSource, Workload, WorkloadKind
from ..profiling.cases import NEW_WORKLOADS
from .measurements import BULK_BATCH_SIZE

#: observed_at of every Gavel measurement: the data carries no measurement time, so a fixed
#: date keeps reloads idempotent. 2020-11-04 is the first day of OSDI 2020, where the Gavel
#: paper was presented; the measurements predate it.
REFERENCE_OBSERVED_AT = datetime(2020, 11, 4, tzinfo=UTC)

_COMPARED_FIELDS = ("throughput", "partner_throughput", "reference", "observed_at")


@dataclass(frozen=True)
class LoadCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass(frozen=True)
class ReferenceLoadResult:
    gpu_types: LoadCounts
    workloads: LoadCounts
    measurements: LoadCounts


@transaction.atomic
def catalog_load_reference(*, throughputs_path: Path | str = GAVEL_THROUGHPUTS) -> ReferenceLoadResult:
    records = read_throughputs(throughputs_path)
    gpu_types, gpu_type_counts = _ensure_gpu_types()
    workloads, workload_counts = _ensure_workloads(records)
    workload_counts = _ensure_suite_workloads(workload_counts)
    unknown = sorted({r.gpu_type for r in records} - gpu_types.keys())
    if unknown:
        raise ValueError(f"{throughputs_path}: GPU types neither in the catalog nor in gpu_type_defaults: {unknown}")
    return ReferenceLoadResult(
        gpu_types=gpu_type_counts,
        workloads=workload_counts,
        measurements=_sync_measurements(records, gpu_types, workloads),
    )


def _ensure_gpu_types() -> tuple[dict[str, GpuType], LoadCounts]:
    existing = {t.name: t for t in GpuType.objects.all()}
    missing = [GpuType(**d.model_fields()) for d in GPU_TYPE_DEFAULTS if d.name not in existing]
    for gpu_type in missing:
        gpu_type.full_clean()
    GpuType.objects.bulk_create(missing)
    counts = LoadCounts(created=len(missing), unchanged=len(GPU_TYPE_DEFAULTS) - len(missing))
    return {t.name: t for t in GpuType.objects.all()}, counts


def _ensure_workloads(records: list[GavelRecord]) -> tuple[dict[str, Workload], LoadCounts]:
    wanted: dict[str, GavelWorkload] = {}
    for record in records:
        for workload in (record.workload, record.partner):
            if workload is not None:
                wanted.setdefault(workload.name, workload)
    existing = set(Workload.objects.filter(name__in=wanted).values_list("name", flat=True))
    missing = [_workload(w) for name, w in wanted.items() if name not in existing]
    Workload.objects.bulk_create(missing)
    counts = LoadCounts(created=len(missing), unchanged=len(existing))
    return {w.name: w for w in Workload.objects.filter(name__in=wanted)}, counts


def _ensure_suite_workloads(counts: LoadCounts) -> LoadCounts:
    """The benchmark suite's own families (catalog.profiling.cases.NEW_WORKLOADS: current shapes
    the reference data lacks), without measurements: a profiling campaign's results for them
    need their rows, and nothing else would create them."""
    existing = set(Workload.objects.filter(name__in=[w[0] for w in NEW_WORKLOADS]).values_list("name", flat=True))
    source = "GOGH benchmark suite (catalog/profiling/cases.py, NEW_WORKLOADS)"
    missing = [
        Workload(name=name, family=family, batch_size=batch_size, kind=WorkloadKind.TRAINING, description=description,
                 provenance={"family": source, "batch_size": source, "description": source})
        for name, family, batch_size, description in NEW_WORKLOADS if name not in existing
    ]
    Workload.objects.bulk_create(missing)
    return LoadCounts(created=counts.created + len(missing), unchanged=counts.unchanged + len(existing))


def _workload(workload: GavelWorkload) -> Workload:
    source = f"Gavel simulation_throughputs.json workload name (commit {GAVEL_COMMIT[:12]})"
    provenance = {"family": source, "batch_size": source}
    description = FAMILY_DESCRIPTIONS.get(workload.family, "")
    if description:
        provenance["description"] = "Gavel paper (Narayanan et al., OSDI 2020), table of workloads"
    return Workload(
        name=workload.name,
        family=workload.family,
        batch_size=workload.batch_size,
        kind=WorkloadKind.TRAINING,
        description=description,
        provenance=provenance,
    )


def _sync_measurements(
    records: list[GavelRecord], gpu_types: dict[str, GpuType], workloads: dict[str, Workload]
) -> LoadCounts:
    existing: dict[tuple, Measurement] = {}
    for row in Measurement.objects.filter(source=MeasurementSource.REFERENCE).order_by("id"):
        existing.setdefault((row.workload_id, row.gpu_type_id, row.num_gpus, row.consolidated, row.partner_id), row)

    to_create, to_update, unchanged = [], [], 0
    for record in records:
        workload = workloads[record.workload.name]
        gpu_type = gpu_types[record.gpu_type]
        partner = workloads[record.partner.name] if record.partner else None
        values = {
            "throughput": record.throughput,
            "partner_throughput": record.partner_throughput,
            "reference": record.reference,
            "observed_at": REFERENCE_OBSERVED_AT,
        }
        row = existing.get((workload.pk, gpu_type.pk, record.num_gpus, record.consolidated, partner and partner.pk))
        if row is None:
            to_create.append(
                Measurement(
                    workload=workload,
                    gpu_type=gpu_type,
                    num_gpus=record.num_gpus,
                    consolidated=record.consolidated,
                    partner=partner,
                    source=MeasurementSource.REFERENCE,
                    **values,
                )
            )
        elif any(getattr(row, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(row, name, value)
            to_update.append(row)
        else:
            unchanged += 1
    Measurement.objects.bulk_create(to_create, batch_size=BULK_BATCH_SIZE)
    # One UPDATE per changed row, not bulk_update: the CASE expressions bulk_update builds take
    # SQLite 13-20 s for the whole file, single-row updates about 3 s; and changes are rare.
    for row in to_update:
        Measurement.objects.filter(pk=row.pk).update(**{name: getattr(row, name) for name in _COMPARED_FIELDS})
    return LoadCounts(created=len(to_create), updated=len(to_update), unchanged=unchanged)

