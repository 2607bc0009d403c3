"""`gogh`'s predictions: the learned predictors (catalog.predictors, P1 + P2) behind the
optimiser's Predictions protocol, one estimate per workload, refined by what telemetry sees.

The optimiser asks per workload, so every job of a workload feeds and reads the same P2
estimate (the truth's deviation is per workload, so pooling is what a cluster would do).
Per workload: P1 is `PerformancePredictor.job(features)`'s first prediction; each observed
round goes to `JobEstimate.observe` (the first `model_observations` of them: each update
costs two forward passes, and by then the observed cells dominate) and into running means.

Three things are the adapter's own, where the predictors' API leaves a gap:
- For a workload the catalog already holds, `JobEstimate.prediction()` reports the catalog's
  isolated throughputs even after the job observed others, so an observed configuration is
  answered with its observed mean here, and the catalog-copied cells of that workload are
  scaled by the geometric mean of observed/P1 over the observed cells (the correction P2
  would learn). Cells the network predicted already follow its observations and are left.
- An observed pair's rho is its observed mean over the current isolated estimate.
- An observation of a configuration or partner the predictor's catalog lacks only feeds the
  running means.
`observe` says whether an estimate moved by more than `tolerance` (the simulator re-solves).
"""
import math

from catalog.predictors import Observation, PerformancePredictor, UnknownGpuType, UnknownWorkload
from scheduler.optimizer.catalog_predictions import CatalogPredictions

TOLERANCE = 0.01


class _Workload:
    def __init__(self, model: PerformancePredictor, features):
        self.job = model.job(features)
        self.prior = self.current = self.job.prediction()
        self.config_index = {c: i for i, c in enumerate(self.prior.configs)}
        self.gpu_index = {a: i for i, a in enumerate(self.prior.gpu_types)}
        self.partner_index = {p: i for i, p in enumerate(self.prior.partners)}
        self.tau_obs: dict[tuple, list[float]] = {}  # config -> [sum, count]
        self.pair_obs: dict[tuple, list[float]] = {}  # (partner, gpu type) -> [sum, count]
        self.log_ratio: dict[tuple, list[float]] = {}  # observed catalog cell -> [sum of log(obs / P1), count]
        self.count = 0
        self.model_count = 0

    def correction(self) -> float:
        if not self.log_ratio:
            return 1.0
        return math.exp(sum(s / n for s, n in self.log_ratio.values()) / len(self.log_ratio))

    def tau(self, config: tuple) -> float | None:
        seen = self.tau_obs.get(config)
        if seen:
            return seen[0] / seen[1] or None
        i = self.config_index.get(config)
        if i is None:
            return None
        value = float(self.current.tau[i])
        if self.prior.tau_measured[i]:
            value *= self.correction()
        return value if value > 0 and math.isfinite(value) else None

    def rho(self, partner: str, gpu_type: str) -> float | None:
        seen = self.pair_obs.get((partner, gpu_type))
        if seen:
            alone = self.tau((gpu_type, 1, True))
            return min(1.0, seen[0] / seen[1] / alone) if alone and seen[0] > 0 else None
        p, a = self.partner_index.get(partner), self.gpu_index.get(gpu_type)
        if p is None or a is None:
            return None
        value = float(self.current.rho[p, a])
        return value if value > 0 and math.isfinite(value) else None

    def prior_throughput(self, config: tuple, partner: str | None) -> float | None:
        """P1's value of a cell it copied from the catalog (None if the network predicted it)."""
        i = self.config_index.get(config if partner is None else (config[0], 1, True))
        if i is None or not self.prior.tau_measured[i]:
            return None
        if partner is None:
            return float(self.prior.tau[i])
        p, a = self.partner_index.get(partner), self.gpu_index.get(config[0])
        if p is None or a is None or not self.prior.rho_measured[p, a]:
            return None
        return float(self.prior.tau[i] * self.prior.rho[p, a])


class LearnedPredictions:
    def __init__(self, model: PerformancePredictor, catalog: CatalogPredictions, features: dict, *,
                 model_observations: int = 20, tolerance: float = TOLERANCE):
        """`features`: workload -> WorkloadFeatures for every workload jobs may run."""
        self.model, self.catalog, self.features = model, catalog, features
        self.model_observations, self.tolerance = model_observations, tolerance
        self._workloads: dict[str, _Workload] = {}

    def _of(self, workload: str) -> _Workload:
        if workload not in self._workloads:
            self._workloads[workload] = _Workload(self.model, self.features[workload])
        return self._workloads[workload]

    def observations(self, workload: str) -> int:
        return self._of(workload).count

    def throughput(self, workload, gpu_type, num_gpus, consolidated, partner=None) -> float | None:
        """The estimate of one job's throughput in a placement (alone, or sharing with `partner`)."""
        if partner is None:
            return self.tau(workload, gpu_type, num_gpus, consolidated)
        alone, rho = self.tau(workload, gpu_type, 1, True), self.rho(workload, partner, gpu_type)
        return alone * rho if alone and rho else None

    def observe(self, workload, gpu_type, num_gpus, consolidated, throughput, partner=None) -> bool:
        """Take one round's observed throughput; True when an estimate moved by more than the tolerance."""
        est = self._of(workload)
        before = self.throughput(workload, gpu_type, num_gpus, consolidated, partner)
        config = (gpu_type, num_gpus, consolidated or num_gpus == 1)
        cells = est.tau_obs if partner is None else est.pair_obs
        key = config if partner is None else (partner, gpu_type)
        first = key not in cells
        sums = cells.setdefault(key, [0.0, 0])
        sums[0] += throughput
        sums[1] += 1
        prior = est.prior_throughput(config, partner)
        if prior and throughput > 0:
            ratio = est.log_ratio.setdefault((key, partner is None), [0.0, 0])
            ratio[0] += math.log(throughput / prior)
            ratio[1] += 1
        est.count += 1
        if est.model_count < self.model_observations:
            try:
                est.job.observe(Observation(gpu_type, throughput, partner=partner, num_gpus=num_gpus,
                                            consolidated=config[2]))
                est.current = est.job.prediction()
                est.model_count += 1
            except (UnknownGpuType, UnknownWorkload):
                pass
        after = self.throughput(workload, gpu_type, num_gpus, consolidated, partner)
        moved = before is None or after is None or abs(after - before) > self.tolerance * before
        return first or moved

    # ---- the optimiser's Predictions protocol ------------------------------------------------
    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self._of(workload).tau((gpu_type, num_gpus, consolidated or num_gpus == 1))

    def rho(self, workload, partner, gpu_type):
        return self._of(workload).rho(partner, gpu_type)

    def utilisation(self, workload, gpu_type):
        return self.catalog.utilisation(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self.catalog.power_w(workload, gpu_type)
