"""`gogh`'s predictions in the simulation: exactly what a production round plans with
(scheduler.predictions.LearnedPredictions: the catalog's measured means, and each workload's
newest P1/P2 estimate), with P2 fed by the simulated telemetry instead of the database.

Per workload, as in production: P1 is `PerformancePredictor.job(features)`'s first prediction;
every observed round is one `JobEstimate.observe` (P2), and the refined prediction replaces the
workload's estimate. Before a workload has been observed its measured cells plan from the
catalog; after, P2's estimate wins where it speaks. The optimiser asks per workload, so every
job of a workload feeds and reads the same estimate (the truth's deviation is per workload, so
pooling is what a cluster would do; production refines per job and plans with the workload's
newest record). `observe` says whether the observed cell's estimate moved by more than
`tolerance` (the simulator re-solves only then).

GPU types of the cluster the predictor was trained without (the modern cluster's T4, A100,
H100 before their campaign) are estimated as production's `_add_unmeasured_types` does: 1-GPU
throughput and co-location fractions from datasheet specs (catalog.predictors.gpu_specs), the
workload's own isolated observations there replacing the guess. A multi-GPU configuration the
predictor has no cell for (on such a type, or spread over servers of a type the campaign
measured in one server only) is a known cell of the type (the same GPUs in one server for a
spread cell, else 1 GPU) x the workload's predicted ratio between the two on the types with
multi-GPU cells (the median), replaced by its own observations once it ran there: the
simulator's stand-in for the catalog's multi-GPU estimate on unmeasured types. An observation
of a partner the predictor's catalog lacks is counted and ignored.

`uncertainty` gives the optimiser's exploration rule (scheduler.optimizer.exploration.beliefs)
each cell's log-space spread and whether a measurement backs it (the catalog's, or the
workload's own observation there). `refit` takes a new predictor and catalog (after a
profiling campaign) and replays every observation so far, as production's next P2 would.

Power limits: every observation of a job alone on one GPU is also a reading of its workload's limit curve
on the type (`observe_limit`, catalog.predictors.learnt_limits): its rate over a reference that
telemetry never changes (the catalog's measured mean of the configuration, else P1's first
estimate), at the limit it ran at (the default included), as the control plane's telemetry does
(docs/power_limits.md, "Limit curves learnt from telemetry"); the curves survive a refit.
Such an observation also carries the GPU's power and utilization: the power is a reading of the
curve's power fraction against the draw the pair was planned with before telemetry (draws.py says
why that reference stays fixed), and the draw is then planned at the reading's learnt reference
factor g x that reference; the utilization's mean is the pair's (shared GPUs are planned at the
summed utilizations). The limit model keeps the catalog's draw as its input, as the readings'
model fractions were computed with it.
"""
import statistics

from catalog.predictors import Observation, PerformancePredictor, UnknownGpuType, UnknownWorkload
from catalog.predictors.gpu_specs import UNMEASURED_LOG_SD, estimate_unmeasured
from catalog.predictors.learnt_limits import LearntLimits, LimitReading
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.instance import draw_alone
from scheduler.predictions import LearnedPredictions, WorkloadEstimates
from telemetry.agent.colocation import group_fraction

from .draws import LearntDraws

TOLERANCE = 0.01
GPU_COUNTS = (2, 4, 8)


class SimulatedLearning:
    def __init__(self, model: PerformancePredictor, catalog: CatalogPredictions, features: dict, *,
                 tolerance: float = TOLERANCE, gpu_types=()):
        """`features`: workload -> WorkloadFeatures for every workload jobs may run; `gpu_types`:
        the cluster's types (those the model lacks are estimated from specs)."""
        self.features, self.tolerance, self.gpu_types = features, tolerance, tuple(gpu_types)
        self._counts: dict[str, int] = {}
        self._log: dict[str, list[Observation]] = {}  # every observation, replayed by refit
        self._estimates: dict[str, WorkloadEstimates] = {}
        self.limits = LearntLimits()
        self.draws = LearntDraws()
        self._prior: dict[str, dict[tuple, float]] = {}  # workload -> P1's first estimates, a reading's reference
        self.refit(model, catalog)

    def refit(self, model: PerformancePredictor, catalog: CatalogPredictions) -> None:
        self.model, self.catalog = model, catalog
        self._jobs = {}  # workload -> JobEstimate (P2 state)
        self._own: dict[str, dict[tuple, list[float]]] = {}  # observations of cells the model lacks
        self._planning = LearnedPredictions(catalog, self._estimates, limits=self.limits)
        for workload in list(self._estimates):
            self._job(workload)
            for observation in self._log.get(workload, ()):
                self._fold(workload, observation)
            self._update(workload)

    def _job(self, workload: str):
        if workload not in self._jobs:
            self._jobs[workload] = self.model.job(self.features[workload])
            self._own[workload] = {}
            self._update(workload)
            self._prior.setdefault(workload, dict(self._estimates[workload].tau))
        return self._jobs[workload]

    def _fold(self, workload: str, observation: Observation) -> None:
        try:
            self._jobs[workload].observe(observation)
        except UnknownGpuType:
            if observation.partner is None:
                key = (observation.gpu_type, observation.num_gpus, observation.consolidated)
                self._own[workload].setdefault(key, []).append(observation.throughput)
        except UnknownWorkload:
            pass

    def _update(self, workload: str) -> None:
        prediction = self._jobs[workload].prediction()
        tau = {tuple(c): float(v) for c, v in zip(prediction.configs, prediction.tau)}
        spread = {tuple(c): float(s) for c, s in zip(prediction.configs, prediction.tau_std)}
        rho = {(partner, t): float(prediction.rho[p, a])
               for p, partner in enumerate(prediction.partners) for a, t in enumerate(prediction.gpu_types)}
        for gpu_type in self.gpu_types:
            if gpu_type in prediction.gpu_types:
                continue
            try:
                guess = estimate_unmeasured(prediction, self.features[workload], gpu_type)
            except (UnknownGpuType, ValueError):
                continue
            tau[(gpu_type, 1, True)], spread[(gpu_type, 1, True)] = guess.tau, guess.tau_std
            rho.update({(partner, gpu_type): float(r) for partner, r in zip(guess.partners, guess.rho)})
        for key, values in self._own[workload].items():
            if key[1] == 1:
                tau[key], spread[key] = statistics.fmean(values), 0.0
        self._scale_to_more_gpus(tau, spread, prediction)
        for key, values in self._own[workload].items():
            tau[key], spread[key] = statistics.fmean(values), 0.0
        measured = {tuple(c) for c, known in zip(prediction.configs, prediction.tau_measured) if known}
        self._estimates[workload] = WorkloadEstimates(
            rho=rho, tau=tau, low_confidence=bool(prediction.low_confidence), observed=self._counts.get(workload, 0),
            tau_std=spread, measured=frozenset(measured | set(self._own[workload])),
        )

    def _scale_to_more_gpus(self, tau: dict, spread: dict, prediction) -> None:
        """Multi-GPU cells the predictor lacks: a known cell of the type (the same GPUs in one
        server for a spread cell, else 1 GPU) x the median ratio between the two on the types it
        was trained on."""
        trained = [t for t in prediction.gpu_types if t not in self._untrained(prediction)]
        for k in GPU_COUNTS:
            for consolidated in (True, False):
                for base in ((k, True), (1, True)) if not consolidated else ((1, True),):
                    ratios = [tau[(t, k, consolidated)] / tau[(t, *base)] for t in trained
                              if tau.get((t, k, consolidated)) and tau.get((t, *base))]
                    if not ratios:
                        continue
                    for gpu_type in self.gpu_types:
                        known = tau.get((gpu_type, *base))
                        if known and (gpu_type, k, consolidated) not in tau:
                            tau[(gpu_type, k, consolidated)] = known * statistics.median(ratios)
                            spread[(gpu_type, k, consolidated)] = spread.get((gpu_type, *base), UNMEASURED_LOG_SD)

    def _untrained(self, prediction) -> set[str]:
        """The trained types without multi-GPU cells (measured by a campaign on 1 GPU, or in one
        server only): their ratios would be the stand-in's own."""
        return {t for t in prediction.gpu_types if (t, 2, False) not in prediction.configs}

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
        self._job(workload)
        partners = (partner,) if partner else ()
        before = self.throughput(workload, gpu_type, num_gpus, consolidated, partners)
        self._counts[workload] = self.observations(workload) + 1
        observation = Observation(gpu_type, throughput, partner=partner, num_gpus=num_gpus,
                                  consolidated=consolidated or num_gpus == 1)
        self._log.setdefault(workload, []).append(observation)
        self._fold(workload, observation)
        self._update(workload)
        after = self.throughput(workload, gpu_type, num_gpus, consolidated, partners)
        if self._counts[workload] == 1 or before is None or after is None:
            return True
        return abs(after - before) > self.tolerance * before

    def reference(self, workload, gpu_type, num_gpus, consolidated) -> float | None:
        """The rate at the default limit a limit reading is read against: the catalog's measured
        mean of the configuration, else P1's first estimate (neither moves with telemetry)."""
        self._job(workload)
        measured = self.catalog.tau(workload, gpu_type, num_gpus, consolidated)
        return measured or self._prior[workload].get((gpu_type, num_gpus, consolidated or num_gpus == 1)) or None

    def prior_draw(self, workload, gpu_type, power_curve) -> float:
        """The draw the pair is planned with before telemetry: the optimiser's rule
        (instance.draw_alone) over the catalog, `power_curve` its type's."""
        return draw_alone(self.catalog, workload, gpu_type, power_curve)

    def observe_limit(self, workload, gpu_type, limit_w, ratio, power_w=None, reference_w=None,
                      utilization=None) -> bool:
        """One reading of the job alone on one GPU at `limit_w` (None: the default), at `ratio` x
        its reference rate, drawing `power_w` (over the pair's reference draw: `reference_w` the
        first time, prior_draw's) at `utilization`; True when the learnt speed or power at that
        limit, or the draw planned at the default, moved by more than the tolerance. A reading no
        rate or draw could give against its reference is left out."""
        model = self.model_at_power_limit(workload, gpu_type, limit_w) if limit_w is not None else (1.0, 1.0)
        if model is None:
            return False
        self.draws.observe(workload, gpu_type, reference_w, utilization)
        reference = self.draws.reference(workload, gpu_type)
        power = power_w / reference if power_w and reference else None
        before = (*self.limits.at_power_limit(workload, gpu_type, model), self.power_w(workload, gpu_type))
        try:
            self.limits.add(workload, gpu_type, LimitReading(
                model_speed=model[0], speed=ratio, model_power=model[1] if power else None, power=power))
        except ValueError:
            return False
        after = (*self.limits.at_power_limit(workload, gpu_type, model), self.power_w(workload, gpu_type))
        return any(a != b if a is None or b is None else abs(a - b) > self.tolerance * b
                   for a, b in zip(after, before))

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated) -> tuple[float, bool]:
        self._job(workload)
        return self._planning.uncertainty(workload, gpu_type, num_gpus, consolidated)

    # ---- the optimiser's Predictions protocol: production's own composition ----------------
    def tau(self, workload, gpu_type, num_gpus, consolidated):
        self._job(workload)
        return self._planning.tau(workload, gpu_type, num_gpus, consolidated)

    def rho(self, workload, partner, gpu_type):
        self._job(workload)
        return self._planning.rho(workload, partner, gpu_type)

    def utilization(self, workload, gpu_type):
        seen = self.draws.utilization(workload, gpu_type)
        return seen if seen is not None else self._planning.utilization(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        """The draw at the default: the power readings' learnt reference factor x the pair's
        reference draw once a reading with power was taken, else the catalog's."""
        reference = self.draws.reference(workload, gpu_type)
        learnt = self.limits.corrections(workload, gpu_type)[1]
        if reference is None or not learnt.readings:
            return self._planning.power_w(workload, gpu_type)
        return reference * learnt.reference

    def at_power_limit(self, workload, gpu_type, limit_w):
        return self._planning.at_power_limit(workload, gpu_type, limit_w)

    def model_at_power_limit(self, workload, gpu_type, limit_w):
        return self._planning.model_at_power_limit(workload, gpu_type, limit_w)

    def memory_gb(self, workload):
        return self._planning.memory_gb(workload)
