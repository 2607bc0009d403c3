"""What the optimiser plans with: the catalog's measurements and the learned predictors'
estimates, combined (pure Python, no Django).

Before a workload has run here, a configuration the catalog measured keeps its measured mean (a
measurement is knowledge, P1's estimate a guess), and P1's estimates fill every gap: a new
workload with no measurements at all, GPU types it never ran on, partners it never shared a GPU
with. Once telemetry has observed the workload on this cluster, P2's refined estimates win
wherever they speak: they hold the observed cells' values and carry what was learned (this
cluster's workload runs 12% slower than the reference said) to the GPU types and partners not
yet observed, which the catalog's reference means cannot. Cells P2 says nothing about fall back
to the measurements.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadEstimates:
    """One stored prediction (catalog.PredictionRecord.estimates) in lookup form."""

    rho: dict[tuple[str, str], float]  # (partner, gpu_type) -> co-located fraction
    tau: dict[tuple[str, int, bool], float]  # (gpu_type, num_gpus, consolidated) -> steps/s
    low_confidence: bool
    observed: int = 0  # observations of the workload P2 has folded in (0: P1 alone)

    @classmethod
    def from_record(cls, estimates: dict) -> "WorkloadEstimates":
        partners, gpu_types = estimates["partners"], estimates["gpu_types"]
        rho = {
            (partner, gpu_type): float(value)
            for partner, row in zip(partners, estimates["rho"])
            for gpu_type, value in zip(gpu_types, row)
        }
        tau = {
            (gpu_type, int(num_gpus), bool(consolidated)): float(value)
            for (gpu_type, num_gpus, consolidated), value in zip(estimates["configs"], estimates["tau"])
        }
        return cls(rho=rho, tau=tau, low_confidence=bool(estimates.get("low_confidence", False)),
                   observed=int(estimates.get("observed", 0)))

    @classmethod
    def from_prediction(cls, prediction, observed: int = 0) -> "WorkloadEstimates":
        """From a catalog.predictors Prediction in memory (the simulation's P2, no database)."""
        rho = {
            (partner, gpu_type): float(prediction.rho[p, a])
            for p, partner in enumerate(prediction.partners)
            for a, gpu_type in enumerate(prediction.gpu_types)
        }
        tau = {tuple(config): float(value) for config, value in zip(prediction.configs, prediction.tau)}
        return cls(rho=rho, tau=tau, low_confidence=bool(prediction.low_confidence), observed=observed)


class LearnedPredictions:
    """The optimiser's Predictions protocol over measured numbers with estimates as fallback."""

    def __init__(self, measured, estimates: dict[str, WorkloadEstimates], memory_gb: dict[str, float] | None = None):
        self._measured = measured
        self._estimates = estimates
        self._memory_gb = memory_gb or {}

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        key = (gpu_type, num_gpus, consolidated or num_gpus == 1)
        estimate = self._estimates.get(workload)
        measured = self._measured.tau(workload, gpu_type, num_gpus, consolidated)
        if estimate is None or key not in estimate.tau or (measured is not None and not estimate.observed):
            return measured
        value = estimate.tau[key]
        return value if value > 0 else None

    def rho(self, workload, partner, gpu_type):
        estimate = self._estimates.get(workload)
        measured = self._measured.rho(workload, partner, gpu_type)
        unestimated = estimate is None or (partner, gpu_type) not in estimate.rho
        if unestimated or (measured is not None and not estimate.observed):
            return measured
        return min(1.0, max(0.0, estimate.rho[(partner, gpu_type)]))

    def utilization(self, workload, gpu_type):
        return self._measured.utilization(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self._measured.power_w(workload, gpu_type)

    def memory_gb(self, workload):
        """Peak GB per GPU telemetry saw the workload use; None when never seen (no constraint)."""
        return self._memory_gb.get(workload)
