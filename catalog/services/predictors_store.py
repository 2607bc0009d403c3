"""Reads and files behind the predictor services: catalog records as plain data, weights files.

Weights live under var/predictors/ as torch state_dicts (plain tensors and lists); a file is
loaded only if its sha256 matches the version's, with torch.load(..., weights_only=True), and
kept in a small cache keyed by that hash, so a worker answering many jobs loads it once.
"""
import functools
import hashlib
import uuid
from pathlib import Path

from django.conf import settings

from catalog.predictors import CatalogPolicy, PerformancePredictor, Record, build_catalog
from catalog.predictors.features import REFERENCE_FAMILIES, WorkloadFeatures, reference_features

from ..models import Measurement, PredictorVersion, Workload


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


def catalog_records() -> list[Record]:
    rows = Measurement.objects.values_list(
        "workload__name", "gpu_type__name", "throughput", "num_gpus", "consolidated", "partner__name",
        "partner_throughput", "power_w", "utilization", "source", "observed_at", "memory_gb",
    )
    return [Record(*row) for row in rows.iterator(chunk_size=5000)]


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
