"""What the simulated cluster really does: throughput, utilization and power of every job.

True throughput of a workload = the measured value in the truth file (the reference data by
default) x a fixed per-workload factor exp(N(0, deviation)) drawn from the seed (the same
factor the simulated agent's jobs use, telemetry.agent.simjob.true_factor), on every GPU type,
alone or sharing. The catalog starts from the measured values, so it is off by that factor
and P2 has something to learn. Telemetry sees each round's throughput with noise
N(0, noise) on top (`observe`); the job itself progresses at the true rate.

Where the truth file has no value: a multi-GPU configuration falls back to the other
placement style (consolidated or spread); a pair it does not list does not run (both jobs
make no progress), as does a configuration measured at 0 (does not fit).

A group of three or more on one GPU (theta > 2) was never measured: a member's true fraction
is telemetry.agent.colocation.group_fraction of its true pair fractions with each other member (the
estimate the optimiser plans with; for one partner, the pair's value exactly). So the
simulator cannot show that estimate wrong, only what planning with it does; a group with an
unlisted pair does not run, as the pair would not.

Utilization: the file's, where it has one; otherwise a busy GPU runs at `busy_utilization`
(0.9, as the simulated GPU backend), and a shared GPU at the sum of its jobs' utilization
scaled by their co-located fractions, capped at 1. Power per GPU: the file's measured power
where it has one, otherwise the GPU type's power curve at that utilization.

At a power limit (`at_power_limit`: speed and power as fractions of the default limit's), where
the workload's family is a Zeus network measured on the type, Zeus's measured curve
(catalog/predictors/power_limits.py), exact; elsewhere the model fitted on all of Zeus, with the
workload's true default-limit power as its draw, its slowdown (1 - speed) and power saving
(1 - power) each x a fixed factor exp(N(0, LIMIT_DEVIATION)) per (workload, type) drawn from the
seed (0.3: about the fitted model's leave-one-network-out error), so the scheduler's fitted model
is wrong as it would be on a family Zeus never measured. The per-workload throughput deviation
applies on top. Jobs sharing a GPU share its limit: each runs at its own speed fraction, and the
GPU draws its shared power x the largest power fraction of its jobs. Below the lowest fraction
Zeus measured nothing is known, and the GPU is taken to run at its default.
"""
import math
import random
from collections.abc import Sequence

from catalog.gavel import parse_workload
from catalog.measurement_record import MeasurementRecord
from catalog.predictors.power_limits import PowerLimitModel, default_model
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.problem import GpuTypeSpec
from telemetry.agent.colocation import group_fraction
from telemetry.agent.simjob import true_factor

BUSY_UTILIZATION = 0.9
#: Spread (log scale) of the truth's departure from the fitted power-limit model, per (workload, type).
LIMIT_DEVIATION = 0.3


class Truth:
    def __init__(self, rows: list[MeasurementRecord], *, seed: int = 0, deviation: float = 0.15, noise: float = 0.05,
                 busy_utilization: float = BUSY_UTILIZATION):
        self.measured = CatalogPredictions(rows)
        self.gpu_types = sorted({r.gpu_type for r in rows})
        self.seed, self.deviation, self.noise, self.busy_utilization = seed, deviation, noise, busy_utilization
        self._factors: dict[str, float] = {}
        self._limit_factors: dict[tuple[str, str], tuple[float, float]] = {}
        self._at_limit: dict[tuple[str, str, float], tuple[float, float]] = {}
        self.limits: PowerLimitModel | None = None  # limit_model()
        self.default_limits_w: dict[str, float] = {}

    def factor(self, workload: str) -> float:
        if workload not in self._factors:
            self._factors[workload] = true_factor(workload, self.seed, self.deviation)
        return self._factors[workload]

    def workloads(self) -> list[str]:
        return self.measured.workloads()

    # ---- the truth -------------------------------------------------------------------------
    def measured_tau(self, workload: str, gpu_type: str, num_gpus: int, consolidated: bool) -> float:
        """The file's value (0 when it has none or it does not fit), before the deviation."""
        m = self.measured
        value = (
            m.tau(workload, gpu_type, num_gpus, consolidated) or m.tau(workload, gpu_type, num_gpus, not consolidated)
        )
        return value or 0.0

    def throughput(self, workload: str, gpu_type: str, num_gpus: int, consolidated: bool) -> float:
        return self.measured_tau(workload, gpu_type, num_gpus, consolidated) * self.factor(workload)

    def shared_rho(self, workload: str, partner: str, gpu_type: str) -> float:
        """Co-located fraction of isolated throughput; 0 where the pair does not run."""
        return self.measured.rho(workload, partner, gpu_type) or 0.0

    def group_rho(self, workload: str, partners: Sequence[str], gpu_type: str) -> float:
        """Fraction of isolated throughput next to all `partners` (workloads) at once; 0 where
        a pair of it does not run."""
        return group_fraction(self.shared_rho(workload, partner, gpu_type) for partner in partners)

    def shared_throughput(self, workload: str, partners: Sequence[str], gpu_type: str) -> float:
        return self.throughput(workload, gpu_type, 1, True) * self.group_rho(workload, partners, gpu_type)

    def utilization(self, workload: str, gpu_type: str) -> float:
        measured = self.measured.utilization(workload, gpu_type)
        return self.busy_utilization if measured is None else measured

    def gpu_power_alone(self, spec: GpuTypeSpec, workload: str) -> float:
        measured = self.measured.power_w(workload, spec.name)
        return measured if measured is not None else spec.power_curve(self.utilization(workload, spec.name))

    def gpu_power_shared(self, spec: GpuTypeSpec, members: Sequence[str]) -> float:
        """One GPU shared by `members` (their workloads, a workload once per job): the power
        curve at the members' summed utilization, each scaled by its fraction next to the
        others, capped at 1."""
        util = 0.0
        for i, workload in enumerate(members):
            others = [*members[:i], *members[i + 1:]]
            util += self.utilization(workload, spec.name) * self.group_rho(workload, others, spec.name)
        return spec.power_curve(min(1.0, util))

    # ---- power limits --------------------------------------------------------------------------
    def at_power_limit(self, spec: GpuTypeSpec, workload: str, limit_w: float | None) -> tuple[float, float]:
        """(speed, power) of `workload` alone at `limit_w` on `spec`'s type, as fractions of its
        default limit's (1, 1 at the default, None, or where nothing is known)."""
        if limit_w is None or limit_w >= spec.tdp_w:
            return 1.0, 1.0
        key = (spec.name, workload, limit_w)
        if key not in self._at_limit:
            self._at_limit[key] = self._curve_at(spec, workload, limit_w)
        return self._at_limit[key]

    def limit_model(self) -> PowerLimitModel:
        """The power-limit model (docs/power_limits.md), read when a limit is first asked about."""
        if self.limits is None:
            self.limits = default_model()
        return self.limits

    def _curve_at(self, spec: GpuTypeSpec, workload: str, limit_w: float) -> tuple[float, float]:
        draw = self.gpu_power_alone(spec, workload)
        curve = self.limit_model().at_power_limit(workload, spec.name, limit_w, default_w=spec.tdp_w, draw_w=draw)
        if curve is None:
            return 1.0, 1.0
        if self._measured_curve(workload, spec.name):
            return curve
        slow, save = self._limit_factor(workload, spec.name)
        return max(0.05, 1.0 - (1.0 - curve[0]) * slow), max(0.05, 1.0 - (1.0 - curve[1]) * save)

    def _measured_curve(self, workload: str, gpu_type: str) -> bool:
        parsed = parse_workload(workload)
        return self.limit_model().measured_curve(parsed.family, parsed.batch_size, gpu_type) is not None

    def _limit_factor(self, workload: str, gpu_type: str) -> tuple[float, float]:
        key = (workload, gpu_type)
        if key not in self._limit_factors:
            rng = random.Random(f"limit:{self.seed}:{workload}:{gpu_type}")
            self._limit_factors[key] = (math.exp(rng.gauss(0.0, LIMIT_DEVIATION)),
                                        math.exp(rng.gauss(0.0, LIMIT_DEVIATION)))
        return self._limit_factors[key]

    def group_at_power_limit(self, spec: GpuTypeSpec, members: Sequence[str], limit_w: float | None) -> float:
        """The power fraction of a GPU shared by `members` at one limit: the largest of theirs."""
        return max(self.at_power_limit(spec, w, limit_w)[1] for w in members)

    def observe(self, rate: float, rng: random.Random) -> float:
        """What telemetry reports for a round at true rate `rate`."""
        return rate * max(0.0, 1.0 + rng.gauss(0.0, self.noise))

    def predictions(self, specs: dict[str, GpuTypeSpec] | None = None) -> "TruePredictions":
        """The oracle's predictions; `specs` (the cluster's GPU types) lets it answer at power limits."""
        return TruePredictions(self, specs)


class TruePredictions:
    """The optimiser's Predictions protocol answered with the true numbers (the oracle)."""

    def __init__(self, truth: Truth, specs: dict[str, GpuTypeSpec] | None = None):
        self.truth = truth
        self.specs = specs or {}

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self.truth.throughput(workload, gpu_type, num_gpus, consolidated) or None

    def rho(self, workload, partner, gpu_type):
        return self.truth.shared_rho(workload, partner, gpu_type) or None

    def utilization(self, workload, gpu_type):
        return self.truth.utilization(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self.truth.measured.power_w(workload, gpu_type)

    def at_power_limit(self, workload, gpu_type, limit_w):
        """The true curve; None where nothing is known (the limit is not offered)."""
        spec = self.specs.get(gpu_type)
        if spec is None:
            return None
        if limit_w < spec.tdp_w and self._unknown(workload, spec, limit_w):
            return None
        return self.truth.at_power_limit(spec, workload, limit_w)

    def _unknown(self, workload, spec, limit_w) -> bool:
        """Below the fractions Zeus measured: the model knows nothing, the limit is not offered."""
        return self.truth.limit_model().at_power_limit(workload, spec.name, limit_w, default_w=spec.tdp_w) is None
