"""Reads and files behind the predictor services: catalog records as plain data, weights files.

Weights live under var/predictors/ as torch state_dicts (plain tensors and lists); a file is
loaded only if its sha256 matches the version's, with torch.load(..., weights_only=True), and
kept in a small cache keyed by that hash, so a worker answering many jobs loads it once.
"""
import functools
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from catalog.measurement_record import MeasurementRecord
from catalog.predictors import CatalogPolicy, PerformancePredictor, build_catalog
from catalog.predictors.features import REFERENCE_FAMILIES, WorkloadFeatures, reference_features

from ..models import GpuType, Measurement, PredictorVersion, Workload


class PredictorFileError(ValueError):
    """A weights file that is missing or does not match its recorded sha256."""


def predictors_dir() -> Path:
    path = Path(settings.VAR_DIR) / "predictors"
    path.mkdir(parents=True, exist_ok=True)
    return path


def catalog_policy() -> CatalogPolicy:
    return CatalogPolicy(window=settings.GOGH_PREDICTOR_WINDOW, min_samples=settings.GOGH_PREDICTOR_MIN_SAMPLES)


def workload_features(workload: Workload) -> WorkloadFeatures:
    """The workload's own features; a reference family's documented ones where it has none."""
    own = (workload.parameters, workload.flops_per_sample, workload.compute_density, workload.memory_intensity,
           workload.communication_overhead)
    if all(v is None for v in own) and workload.family in REFERENCE_FAMILIES:
        return reference_features(workload.name, workload.family, workload.batch_size)
    return WorkloadFeatures(workload.name, workload.family, workload.batch_size, *own)


def catalog_records() -> list[MeasurementRecord]:
    """Every measurement, newest first (training reads the whole catalog)."""
    rows = Measurement.objects.values_list(*RECORD_FIELDS)
    return [_record(*row) for row in rows.iterator(chunk_size=5000)]


def catalog_window_records(window: int) -> list[MeasurementRecord]:
    """The newest `window` measurements of each configuration (workload, GPU type, GPUs,
    consolidated, partner), newest first: all that the catalog policy keeps of catalog_records()
    (apply_policy gives the same groups), so a round reads as much however long the history.
    Between rows observed at the same instant the lower id counts as newer, as apply_policy's
    stable sort of the newest-first list has it.

    PostgreSQL walks the configurations through the measurement_config_window index and reads
    the window of each from it: the history behind the windows is never touched. SQLite numbers
    every row within its configuration and keeps the first `window`: one query too, and only the
    windows reach Python, but the database still scans the history (a long one belongs on
    PostgreSQL)."""
    if connection.vendor == "postgresql":
        sql = _WINDOW_SQL.format(measurement=Measurement._meta.db_table, workload=Workload._meta.db_table,
                                 gpu_type=GpuType._meta.db_table)
        with transaction.atomic(), connection.cursor() as cursor:
            # The planner takes a configuration for a few dozen rows (the reference catalog's
            # thousands of one-row configurations weigh in its statistics), and would rather
            # fetch every row of one through a bitmap and sort them than walk the index to its
            # newest `window`: at 1 M rows that read the whole history (10 s instead of 1 s).
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute(sql, [window])
            rows = cursor.fetchall()
            cursor.execute("SET LOCAL enable_bitmapscan TO DEFAULT")
        # observed_at comes as microseconds since the epoch: Django's time zone loader, called
        # once per timestamp, took longer than the query itself.
        return [_record(*row[:-2], _EPOCH + timedelta(microseconds=row[-2]), row[-1]) for row in rows]
    ranked = Measurement.objects.annotate(rank=Window(
        RowNumber(), partition_by=[F("workload"), F("gpu_type"), F("num_gpus"), F("consolidated"), F("partner")],
        order_by=[F("observed_at").desc(), F("id").asc()],
    )).filter(rank__lte=window)
    return [_record(*row) for row in ranked.order_by("-observed_at", "-id").values_list(*RECORD_FIELDS)]


#: The columns every read here selects, in the order _record takes them (_WINDOW_SQL's too).
RECORD_FIELDS = (
    "workload__name", "gpu_type__name", "throughput", "num_gpus", "consolidated", "partner__name",
    "partner_throughput", "power_w", "utilization", "source", "observed_at", "memory_gb",
)


def _record(workload, gpu_type, throughput, num_gpus, consolidated, partner, partner_throughput, power_w,
            utilization, source, observed_at, memory_gb) -> MeasurementRecord:
    """The record of one row of RECORD_FIELDS. Named parameters rather than a dict per row: the
    round reads some 100,000 rows, and zipping each into a dict took twice as long."""
    return MeasurementRecord(
        workload=workload, gpu_type=gpu_type, throughput=throughput, num_gpus=num_gpus, consolidated=consolidated,
        partner=partner, partner_throughput=partner_throughput, power_w=power_w, utilization=utilization,
        source=source, observed_at=observed_at, memory_gb=memory_gb,
    )
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CONFIGURATION = "m.workload_id, m.gpu_type_id, m.num_gpus, m.consolidated, COALESCE(m.partner_id, 0)"
# The configurations in index order, each found from the one before by one index probe (a
# recursive "loose index scan"), then each one's newest rows by one ordered index range.
_WINDOW_SQL = f"""
WITH RECURSIVE configuration (workload_id, gpu_type_id, num_gpus, consolidated, partner_key) AS (
    (SELECT {_CONFIGURATION} FROM {{measurement}} m ORDER BY {_CONFIGURATION} LIMIT 1)
    UNION ALL
    SELECT following.* FROM configuration c CROSS JOIN LATERAL (
        SELECT {_CONFIGURATION} FROM {{measurement}} m
        WHERE ({_CONFIGURATION}) > (c.workload_id, c.gpu_type_id, c.num_gpus, c.consolidated, c.partner_key)
        ORDER BY {_CONFIGURATION} LIMIT 1
    ) following
)
SELECT w.name, g.name, m.throughput, m.num_gpus, m.consolidated, p.name, m.partner_throughput, m.power_w,
       m.utilization, m.source, (EXTRACT(EPOCH FROM m.observed_at) * 1000000)::bigint, m.memory_gb
FROM configuration c CROSS JOIN LATERAL (
    SELECT * FROM {{measurement}} m
    WHERE m.workload_id = c.workload_id AND m.gpu_type_id = c.gpu_type_id AND m.num_gpus = c.num_gpus
      AND m.consolidated = c.consolidated AND COALESCE(m.partner_id, 0) = c.partner_key
    ORDER BY m.observed_at DESC, m.id LIMIT %s
) m
JOIN {{workload}} w ON w.id = m.workload_id
JOIN {{gpu_type}} g ON g.id = m.gpu_type_id
LEFT JOIN {{workload}} p ON p.id = m.partner_id
ORDER BY m.observed_at DESC, m.id DESC
"""


def catalog_snapshot():
    """(CatalogData of the whole catalog under the policy, a summary of what went in)."""
    records = catalog_records()
    features = {w.name: workload_features(w) for w in Workload.objects.all()}
    catalog = build_catalog(records, catalog_policy(), features)
    newest = max((r.observed_at for r in records if r.observed_at), default=None)
    summary = {
        "records": len(records),
        "newest_observed_at": newest.isoformat() if newest else None,
        "workloads": len(catalog.workloads),
        "gpu_types": catalog.gpu_types,
        "measurements_max_id": Measurement.objects.order_by("-id").values_list("id", flat=True).first(),
        "policy": {"window": catalog_policy().window, "min_samples": catalog_policy().min_samples},
    }
    return catalog, summary


def weights_save(model: PerformancePredictor, name: str) -> tuple[str, str]:
    """Write the model's state_dict; returns (file name under var/predictors/, sha256)."""
    data = model.to_bytes()
    file_name = f"{name}-{model.architecture}-{uuid.uuid4().hex[:12]}.pt"
    folder = predictors_dir().resolve()
    path = (folder / file_name).resolve()
    if path.parent != folder:  # a name with a separator or "..": never write outside var/predictors/
        raise PredictorFileError(f"weights file name {file_name[:80]!r} does not stay in {folder}")
    path.write_bytes(data)
    return file_name, hashlib.sha256(data).hexdigest()


def weights_discard(file_name: str) -> None:
    """Remove a weights file no version row refers to (its insert failed)."""
    (predictors_dir() / file_name).unlink(missing_ok=True)


def weights_load(version: PredictorVersion) -> PerformancePredictor:
    return _load(version.weights_file, version.weights_sha256)


@functools.lru_cache(maxsize=8)
def _load(file_name: str, sha256: str) -> PerformancePredictor:
    path = predictors_dir() / file_name
    if not path.exists():
        raise PredictorFileError(f"weights file {path} is missing")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise PredictorFileError(f"weights file {path} does not match its sha256 {sha256}")
    return PerformancePredictor.from_bytes(data)
