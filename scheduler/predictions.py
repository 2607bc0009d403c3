"""What the optimiser plans with: the catalog's measurements and the learned predictors'
estimates, combined (pure Python, no Django).

Before a workload has run here, a configuration the catalog measured keeps its measured mean (a
measurement is knowledge, P1's estimate a guess), and P1's estimates fill every gap: a new
workload with no measurements at all, GPU types it never ran on, partners it never shared a GPU
with. Once telemetry has observed the workload on this cluster, P2's refined estimates win
wherever they speak: they hold the observed cells' values and carry what was learned (this
cluster's workload runs 12% slower than the reference said) to the GPU types and partners not
yet observed, which the catalog's reference means cannot. Cells P2 says nothing about fall back
to the measurements. Speed and power at a power limit: the Zeus-based model
(catalog/predictors/power_limits.py), with the job's draw as known without telemetry (the
reference and profiling measurements' power: what the limit readings were taken with), corrected
per (workload, type) by what telemetry read at limits (catalog/predictors/learnt_limits.py).
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkloadEstimates:
    """One stored prediction (catalog.PredictionRecord.estimates) in lookup form."""

    rho: dict[tuple[str, str], float]  # (partner, gpu_type) -> co-located fraction
    tau: dict[tuple[str, int, bool], float]  # (gpu_type, num_gpus, consolidated) -> steps/s
    low_confidence: bool
    observed: int = 0  # observations of the workload P2 has folded in (0: P1 alone)
    # Log-space standard deviation of each tau (missing: unknown, read as 0, i.e. no margin and no
    # probe); and the configurations backed by a measurement of the workload (observed or catalog).
    tau_std: dict[tuple[str, int, bool], float] = field(default_factory=dict)
    measured: frozenset = frozenset()

    @classmethod
    def from_record(cls, estimates: dict) -> "WorkloadEstimates":
        partners, gpu_types = estimates["partners"], estimates["gpu_types"]
        rho = {
            (partner, gpu_type): float(value)
            for partner, row in zip(partners, estimates["rho"])
            for gpu_type, value in zip(gpu_types, row)
        }
        keys = [(gpu_type, int(k), bool(consolidated)) for gpu_type, k, consolidated in estimates["configs"]]
        tau = {key: float(value) for key, value in zip(keys, estimates["tau"])}
        tau_std = {key: float(value) for key, value in zip(keys, estimates.get("tau_std") or [])}
        # A stored record marks no measured cells; the predictor sets a cell's spread to exactly 0
        # where the job was observed there (catalog.predictors.online), so 0 reads as measured.
        return cls(rho=rho, tau=tau, low_confidence=bool(estimates.get("low_confidence", False)),
                   observed=int(estimates.get("observed", 0)), tau_std=tau_std,
                   measured=frozenset(key for key, std in tau_std.items() if std == 0.0))

    @classmethod
    def from_prediction(cls, prediction, observed: int = 0) -> "WorkloadEstimates":
        """From a catalog.predictors Prediction in memory (the simulation's P2, no database)."""
        rho = {
            (partner, gpu_type): float(prediction.rho[p, a])
            for p, partner in enumerate(prediction.partners)
            for a, gpu_type in enumerate(prediction.gpu_types)
        }
        keys = [tuple(config) for config in prediction.configs]
        return cls(rho=rho, tau={key: float(value) for key, value in zip(keys, prediction.tau)},
                   low_confidence=bool(prediction.low_confidence), observed=observed,
                   tau_std={key: float(value) for key, value in zip(keys, prediction.tau_std)},
                   measured=frozenset(key for key, known in zip(keys, prediction.tau_measured) if known))


class LearnedPredictions:
    """The optimiser's Predictions protocol over measured numbers with estimates as fallback."""

    def __init__(self, measured, estimates: dict[str, WorkloadEstimates], memory_gb: dict[str, float] | None = None,
                 limits=None, draws: dict[tuple[str, str], float] | None = None):
        """`limits`: a catalog.predictors.learnt_limits.LearntLimits (None: the model alone);
        `draws`: {(workload, type): W}, the draws the power-limit model takes, as the limit
        readings were taken with them (catalog.selectors.reference_draws; None: `measured`'s
        power)."""
        self._measured = measured
        self._estimates = estimates
        self._memory_gb = memory_gb or {}
        self._limits = limits
        self._draws = draws

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        key = (gpu_type, num_gpus, consolidated or num_gpus == 1)
        estimate = self._estimates.get(workload)
        measured = self._measured.tau(workload, gpu_type, num_gpus, consolidated)
        if estimate is None or key not in estimate.tau or (measured is not None and not estimate.observed):
            return measured
        value = estimate.tau[key]
        return value if value > 0 else None

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated) -> tuple[float, bool]:
        """(log-space standard deviation, measured) of tau() for the same arguments: a catalog
        measurement in use keeps its own spread (over its records) and is measured; an estimate
        carries its stored spread and is measured where the job was observed there."""
        key = (gpu_type, num_gpus, consolidated or num_gpus == 1)
        estimate = self._estimates.get(workload)
        measured = self._measured.tau(workload, gpu_type, num_gpus, consolidated)
        if estimate is None or key not in estimate.tau or (measured is not None and not estimate.observed):
            doubt = getattr(self._measured, "uncertainty", None)
            return doubt(workload, gpu_type, num_gpus, consolidated) if doubt else (0.0, True)
        return estimate.tau_std.get(key, 0.0), measured is not None or key in estimate.measured

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

    def at_power_limit(self, workload, gpu_type, limit_w):
        model = self.model_at_power_limit(workload, gpu_type, limit_w)
        return self._limits.at_power_limit(workload, gpu_type, model) if self._limits is not None else model

    def model_at_power_limit(self, workload, gpu_type, limit_w):
        """The power-limit model's answer alone, before telemetry's correction (what a reading at
        the limit is compared with)."""
        # Imported here: catalog.predictors loads the predictor networks' libraries, which a
        # round that offers no power limit never needs.
        from catalog.predictors.power_limits import default_model

        draw_w = self.power_w(workload, gpu_type) if self._draws is None else self._draws.get((workload, gpu_type))
        return default_model().at_power_limit(workload, gpu_type, limit_w, draw_w=draw_w)

    def memory_gb(self, workload):
        """Peak GB per GPU telemetry saw the workload use; None when never seen (no constraint)."""
        return self._memory_gb.get(workload)
