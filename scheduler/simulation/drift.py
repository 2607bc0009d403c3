"""The truth kit: a drifted copy of a measurements file, for `simulate --truth`.

A drift is TARGET:GPU_TYPES:FACTOR: every throughput of the workload TARGET (or of every
workload of the family TARGET, e.g. `ResNet-50`) on the listed GPU types (comma-separated, or
`*` for every type) is multiplied by FACTOR, alone and sharing a GPU: a pair row's
`throughput` when the row's workload drifts, its `partner_throughput` when its partner does,
so the co-located fractions stay as measured and only the speed changes (the drift the catalog
cannot see: a newer library, another input pipeline). Power, utilization and the rest are
copied. Two drifts that hit the same row multiply. The catalog stays the original file, so the
scheduler starts from numbers that are wrong by exactly these factors.
"""
import csv
import math
from dataclasses import dataclass
from pathlib import Path

from catalog.gavel import parse_workload
from catalog.measurement_csv import COLUMNS
from catalog.measurement_record import MeasurementRecord

EVERY_TYPE = "*"


class DriftError(ValueError):
    """A drift that names nothing in the file or cannot be applied; the message says why."""


@dataclass(frozen=True)
class Drift:
    target: str  # a workload name or a family name
    gpu_types: frozenset[str] | None  # None: every type
    factor: float

    def hits(self, workload: str | None, gpu_type: str) -> bool:
        if workload is None or (self.gpu_types is not None and gpu_type not in self.gpu_types):
            return False
        return workload == self.target or parse_workload(workload).family == self.target


def parse_drift(text: str) -> Drift:
    """TARGET:GPU_TYPES:FACTOR (split from the right: a workload name holds no colon)."""
    target, _, rest = text.rpartition(":")
    target, _, types = target.rpartition(":")
    if not target.strip() or not types.strip():
        raise DriftError(f"takes WORKLOAD_OR_FAMILY:GPU_TYPES:FACTOR (GPU_TYPES comma-separated or {EVERY_TYPE}); "
                         f"not {text!r}")
    try:
        factor = float(rest)
    except ValueError:
        factor = math.nan
    if not math.isfinite(factor) or factor <= 0:
        raise DriftError(f"{text!r}: the factor {rest!r} is not a finite number greater than 0")
    names = [t.strip() for t in types.split(",") if t.strip()]
    gpu_types = None if names == [EVERY_TYPE] else frozenset(names)
    if gpu_types is not None and (not names or EVERY_TYPE in gpu_types):
        raise DriftError(f"{text!r}: GPU_TYPES is a comma-separated list of types, or {EVERY_TYPE} alone")
    return Drift(target.strip(), gpu_types, factor)


def check_drifts(records: list[MeasurementRecord], drifts: list[Drift]) -> None:
    """DriftError naming every drift whose workload/family or GPU type the file does not have."""
    workloads = {r.workload for r in records}
    families = {parse_workload(w).family for w in workloads}
    types = {r.gpu_type for r in records}
    problems = []
    for d in drifts:
        if d.target not in workloads and d.target not in families:
            problems.append(f"{d.target!r} is neither a workload nor a family of the file "
                            f"(families: {', '.join(sorted(families))})")
        for gpu_type in sorted((d.gpu_types or set()) - types):
            problems.append(f"{d.target!r}: no GPU type {gpu_type!r} in the file (types: {', '.join(sorted(types))})")
    if problems:
        raise DriftError("; ".join(problems))


def drift_records(records: list[MeasurementRecord], drifts: list[Drift]) -> list[MeasurementRecord]:
    check_drifts(records, drifts)
    out = []
    for r in records:
        mine = math.prod(d.factor for d in drifts if d.hits(r.workload, r.gpu_type))
        partner = math.prod(d.factor for d in drifts if d.hits(r.partner, r.gpu_type))
        out.append(r._replace(
            throughput=r.throughput * mine,
            partner_throughput=None if r.partner_throughput is None else r.partner_throughput * partner,
        ))
    return out


def _field(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return repr(value) if isinstance(value, float) else str(value)


def write_measurements(records: list[MeasurementRecord], path: Path | str) -> None:
    """The records in the measurements CSV format (docs/measurements-csv.md), every column."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for r in records:
            writer.writerow([_field(getattr(r, column)) for column in COLUMNS])
