"""prediction_create estimates every GPU type the predictor was trained without, from specs."""
import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.models import GpuType
from catalog.services import predictors as services
from scheduler.predictions import WorkloadEstimates

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


def test_unmeasured_types_get_multi_gpu_configurations_with_wider_uncertainty(slice_):
    workloads, _ = slice_
    train()
    GpuType.objects.bulk_create(GpuType(**d.model_fields()) for d in GPU_TYPE_DEFAULTS if d.name == "a100")
    seen = {"gpu_type": "a100", "throughput": 50.0, "partner": None, "partner_throughput": None, "num_gpus": 4,
            "consolidated": True}
    estimates = services.prediction_create(workload=workloads["ResNet-50 (batch size 64)"], job_id=1,
                                           observations=[seen]).estimates
    tau = {tuple(c): (t, s) for c, t, s in zip(estimates["configs"], estimates["tau"], estimates["tau_std"])}
    one, two, eight = tau[("a100", 1, True)], tau[("a100", 2, True)], tau[("a100", 8, True)]
    assert one[0] < two[0] < eight[0] < 8 * one[0]  # more GPUs, faster, not linearly
    assert one[1] < two[1] < eight[1]
    assert tau[("a100", 2, False)][0] < two[0]  # spread across servers communicates slower
    assert tau[("a100", 4, True)] == (50.0, 0.0)  # the job's own observation replaces the guess
    assert ["a100", 8, True] in estimates["scaled_configs"]
    assert not any(c[0] == "v100" for c in estimates["scaled_configs"])  # measured ones stay as they are
    planned = WorkloadEstimates.from_record(estimates)  # what the optimiser reads
    assert planned.tau[("a100", 8, True)] == eight[0] and planned.tau[("a100", 8, False)] > 0
