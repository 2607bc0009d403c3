"""prediction_create estimates every GPU type the predictor was trained without, from specs."""
import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.models import GpuType
from catalog.services import predictors as services

from .test_services import slice_ as slice_, train, var as var  # fixtures, `as` marks them re-exported

pytestmark = pytest.mark.django_db


def test_all_untrained_types_get_spec_estimates(slice_):
    workloads, _ = slice_
    train()
    newer = [d for d in GPU_TYPE_DEFAULTS if d.name not in ("k80", "p100", "v100")]
    GpuType.objects.bulk_create(GpuType(**d.model_fields()) for d in newer)
    record = services.prediction_create(workload=workloads["A3C"], job_id=1)
    estimates = record.estimates
    assert estimates["unmeasured_gpu_types"] == sorted(d.name for d in newer)
    assert estimates["gpu_types"] == ["k80", "p100", "v100", *estimates["unmeasured_gpu_types"]]
    tau = {tuple(c[:2]): t for c, t in zip(estimates["configs"], estimates["tau"])}
    assert all(tau[(d.name, 1)] > 0 for d in newer)
    assert all(len(row) == len(estimates["gpu_types"]) for row in estimates["rho"])
    # newer types are faster than the K80 for the same job (specs: more FLOPs and bandwidth)
    assert tau[("h200", 1)] > tau[("k80", 1)] and tau[("h200", 1)] >= tau[("h100", 1)]
