"""Writes of measurements: reports from agents (API) and operators' files (import_measurements)."""
import difflib
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from ..measurement_csv import MeasurementFileError, RowError, RowNames, parse_measurements
from ..measurement_limits import limit_problems
from ..measurement_record import MeasurementRecord
from ..models import GpuType, Measurement, Workload
from ..selectors import gpu_type_list, gpu_types_by_name, workload_list, workloads_by_name

BULK_BATCH_SIZE = 1000


@transaction.atomic
def measurements_create(*, measurements: Iterable[dict], by=None) -> list[Measurement]:
    """Create validated measurements in bulk, all or none.

    Each dict holds Measurement fields with model instances for workload, gpu_type and partner,
    already validated (by the API serializer or the CSV reader); the database's check
    constraints stay as the last guard. observed_at defaults to now.
    `by`: the account reporting them through the API. What an agent account may write is the
    scheduler's rule (settings.GOGH_AGENT_MEASUREMENT_RULE: only what runs on its nodes); it
    raises PermissionDenied, and then nothing is stored.
    """
    measurements = list(measurements)
    if by is not None:
        import_string(settings.GOGH_AGENT_MEASUREMENT_RULE)(user=by, measurements=measurements)
    now = timezone.now()
    rows = [Measurement(**{"observed_at": now, **fields}) for fields in measurements]
    return Measurement.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE)


def measurement_record(**fields) -> Measurement:
    """Store one observation that another app made (a running job's throughput, from its agent):
    Measurement fields, already within the catalog's limits (measurement_limits)."""
    return Measurement.objects.create(**fields)


@transaction.atomic
def measurements_import(*, path: Path | str) -> list[Measurement]:
    """Import a measurements CSV (docs/measurements-csv.md), all rows or none.

    Raises MeasurementFileError listing every problem as `file:line: reason`: the reader's
    syntax and limit checks and, here, names that the catalog does not know and peak memory
    beyond what the row's GPU type has. A row without a reference
    gets `<file name>:<line>` so that every imported value can be traced to its file.
    """
    parsed = parse_measurements(path)
    rows, names = parsed.records, parsed.names
    gpu_types = gpu_types_by_name(names=(n.gpu_type for n in names))
    workloads = workloads_by_name(names=[n.workload for n in names] + [n.partner for n in names if n.partner])
    errors = parsed.errors + _unknown_name_errors(path, names, gpu_types, workloads) + _memory_errors(
        path, rows, gpu_types
    )
    if errors:
        raise MeasurementFileError(errors)
    file_name = Path(path).name
    return measurements_create(
        measurements=[
            {
                "workload": workloads[row.workload],
                "gpu_type": gpu_types[row.gpu_type],
                "num_gpus": row.num_gpus,
                "consolidated": row.consolidated,
                "partner": workloads[row.partner] if row.partner else None,
                "throughput": row.throughput,
                "partner_throughput": row.partner_throughput,
                "power_w": row.power_w,
                "utilization": row.utilization,
                "memory_gb": row.memory_gb,
                "source": row.source,
                "reference": row.reference or f"{file_name}:{line}",
                **({"observed_at": row.observed_at} if row.observed_at else {}),
            }
            for line, row in rows.items()
        ]
    )


def _memory_errors(path: Path | str, rows: dict[int, MeasurementRecord],
                   gpu_types: dict[str, GpuType]) -> list[RowError]:
    """Rows (records by line) whose peak memory per GPU exceeds their (known) GPU type's memory."""
    now = timezone.now()
    return [
        RowError(str(path), line, f"memory_gb: {reason}")
        for line, row in rows.items()
        if row.memory_gb is not None and row.gpu_type in gpu_types
        for reason in limit_problems(now=now, memory_gb=row.memory_gb,
                                     gpu_memory_gb=gpu_types[row.gpu_type].memory_gb).values()
    ]


def _unknown_name_errors(
    path: Path | str, names: list[RowNames], gpu_types: dict[str, GpuType], workloads: dict[str, Workload]
) -> list[RowError]:
    """Rows (valid or not) naming a workload, GPU type or partner the catalog lacks, with a hint."""
    missing = [
        (row.line, what, name)
        for row in names
        for what, name, known in (
            ("workload", row.workload, workloads),
            ("gpu type", row.gpu_type, gpu_types),
            ("partner", row.partner, workloads),
        )
        if name and name not in known
    ]
    if not missing:
        return []
    gpu_type_names = sorted(gpu_type_list().values_list("name", flat=True))
    workload_names = list(workload_list().values_list("name", flat=True))
    errors = []
    for line, what, name in missing:
        if what == "gpu type":
            hint = f" (known: {', '.join(gpu_type_names) or 'none'})"
        else:
            close = difflib.get_close_matches(name, workload_names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        errors.append(RowError(str(path), line, f"unknown {what} {name!r}{hint}"))
    return errors
