"""`gogh`'s predictions in the simulation: exactly what a production round plans with
(scheduler.predictions.LearnedPredictions: the catalog's measured means, and each workload's
newest P1/P2 estimate), with P2 fed by the simulated telemetry instead of the database.

Per workload, as in production: P1 is `PerformancePredictor.job(features)`'s first prediction;
every observed round is one `JobEstimate.observe` (P2), and the refined prediction replaces the
workload's estimate. Before a workload has been observed its measured cells plan from the
catalog; after, P2's estimate wins where it speaks. The optimiser asks per workload, so every
job of a workload feeds and reads the same estimate (the truth's deviation is per workload, so
pooling is what a cluster would do; production refines per job and plans with the workload's
newest record). An observation of a configuration or partner the predictor's catalog lacks
cannot be folded in; it is counted and otherwise ignored, as the model would refuse it.
`observe` says whether the observed cell's estimate moved by more than `tolerance` (the
simulator re-solves only then).
"""
from catalog.predictors import Observation, PerformancePredictor, UnknownGpuType, UnknownWorkload
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.predictions import LearnedPredictions, WorkloadEstimates
from telemetry.agent.colocation import group_fraction

TOLERANCE = 0.01


class SimulatedLearning:
    def __init__(self, model: PerformancePredictor, catalog: CatalogPredictions, features: dict, *,
                 tolerance: float = TOLERANCE):
        """`features`: workload -> WorkloadFeatures for every workload jobs may run."""
        self.model, self.features, self.tolerance = model, features, tolerance
        self._jobs = {}  # workload -> JobEstimate (P2 state)
        self._counts: dict[str, int] = {}
        self._estimates: dict[str, WorkloadEstimates] = {}
        self._planning = LearnedPredictions(catalog, self._estimates)

    def _job(self, workload: str):
        if workload not in self._jobs:
            self._jobs[workload] = self.model.job(self.features[workload])
            self._estimates[workload] = WorkloadEstimates.from_prediction(self._jobs[workload].prediction())
        return self._jobs[workload]

    def observations(self, workload: str) -> int:
        return self._counts.get(workload, 0)

    def throughput(self, workload, gpu_type, num_gpus, consolidated, partners=()) -> float | None:
        """The estimate of one job's throughput in a placement (alone, or sharing its GPU with
        the workloads `partners`: the alone estimate x group_fraction of the pair estimates,
        as the optimiser plans)."""
        if not partners:
            return self.tau(workload, gpu_type, num_gpus, consolidated)
        alone, rhos = self.tau(workload, gpu_type, 1, True), [self.rho(workload, p, gpu_type) for p in partners]
        return alone * group_fraction(rhos) if alone and all(rhos) else None

    def observe(self, workload, gpu_type, num_gpus, consolidated, throughput, partner=None) -> bool:
        """P2 takes one round's observed throughput, alone or next to one `partner` (the model
        learns pairs only); True when the cell's estimate moved by more than the tolerance (or
        it is the workload's first observation)."""
        job = self._job(workload)
        partners = (partner,) if partner else ()
        before = self.throughput(workload, gpu_type, num_gpus, consolidated, partners)
        self._counts[workload] = self.observations(workload) + 1
        try:
            job.observe(Observation(gpu_type, throughput, partner=partner, num_gpus=num_gpus,
                                    consolidated=consolidated or num_gpus == 1))
        except (UnknownGpuType, UnknownWorkload):
            return False
        self._estimates[workload] = WorkloadEstimates.from_prediction(job.prediction(), observed=self._counts[workload])
        after = self.throughput(workload, gpu_type, num_gpus, consolidated, partners)
        if self._counts[workload] == 1 or before is None or after is None:
            return True
        return abs(after - before) > self.tolerance * before

    # ---- the optimiser's Predictions protocol: production's own composition ----------------
    def tau(self, workload, gpu_type, num_gpus, consolidated):
        self._job(workload)
        return self._planning.tau(workload, gpu_type, num_gpus, consolidated)

    def rho(self, workload, partner, gpu_type):
        self._job(workload)
        return self._planning.rho(workload, partner, gpu_type)

    def utilization(self, workload, gpu_type):
        return self._planning.utilization(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self._planning.power_w(workload, gpu_type)

    def memory_gb(self, workload):
        return self._planning.memory_gb(workload)
