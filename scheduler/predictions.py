"""What the optimiser plans with: measured catalog numbers first, the learned predictors' estimates
where nothing was measured (pure Python, no Django).

A measurement of a configuration is knowledge; an estimate from P1/P2 is a guess with an
uncertainty. So a configuration the catalog measured keeps its measured mean, and the stored
estimates of the job's workload (P1 at submission, refined by P2 as telemetry arrives) fill every
gap: a new workload with no measurements at all, GPU types the workload never ran on, partners
it never shared a GPU with. `source(...)` says which one a number came from.
"""
from dataclasses import dataclass

MEASURED, PREDICTED = "measured", "predicted"


@dataclass(frozen=True)
class WorkloadEstimates:
    """One stored prediction (catalog.PredictionRecord.estimates) in lookup form."""

    rho: dict[tuple[str, str], float]  # (partner, gpu_type) -> co-located fraction
    tau: dict[tuple[str, int, bool], float]  # (gpu_type, num_gpus, consolidated) -> steps/s
    low_confidence: bool

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
        return cls(rho=rho, tau=tau, low_confidence=bool(estimates.get("low_confidence", False)))


class LearnedPredictions:
    """The optimiser's Predictions protocol over measured numbers with estimates as fallback."""

    def __init__(self, measured, estimates: dict[str, WorkloadEstimates], memory_gb: dict[str, float] | None = None):
        self._measured = measured
        self._estimates = estimates
        self._memory_gb = memory_gb or {}

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        value = self._measured.tau(workload, gpu_type, num_gpus, consolidated)
        if value is not None:
            return value
        estimate = self._estimates.get(workload)
        if estimate is None:
            return None
        value = estimate.tau.get((gpu_type, num_gpus, consolidated or num_gpus == 1))
        return value if value and value > 0 else None

    def rho(self, workload, partner, gpu_type):
        value = self._measured.rho(workload, partner, gpu_type)
        if value is not None:
            return value
        estimate = self._estimates.get(workload)
        if estimate is None or (partner, gpu_type) not in estimate.rho:
            return None
        return min(1.0, max(0.0, estimate.rho[(partner, gpu_type)]))

    def utilisation(self, workload, gpu_type):
        return self._measured.utilisation(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self._measured.power_w(workload, gpu_type)

    def memory_gb(self, workload):
        """Peak GB per GPU telemetry saw the workload use; None when never seen (no constraint)."""
        return self._memory_gb.get(workload)

    def source(self, workload: str, gpu_type: str, num_gpus: int = 1, consolidated: bool = True) -> str | None:
        """Where tau(workload, gpu_type, ...) comes from: MEASURED, PREDICTED or None (unknown)."""
        if self._measured.tau(workload, gpu_type, num_gpus, consolidated) is not None:
            return MEASURED
        return PREDICTED if self.tau(workload, gpu_type, num_gpus, consolidated) is not None else None
