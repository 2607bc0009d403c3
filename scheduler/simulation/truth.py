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
"""
import random
from collections.abc import Sequence

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.problem import GpuTypeSpec
from telemetry.agent.colocation import group_fraction
from telemetry.agent.simjob import true_factor

BUSY_UTILIZATION = 0.9


class Truth:
    def __init__(self, rows: list[MeasurementRecord], *, seed: int = 0, deviation: float = 0.15, noise: float = 0.05,
                 busy_utilization: float = BUSY_UTILIZATION):
        self.measured = CatalogPredictions(rows)
        self.gpu_types = sorted({r.gpu_type for r in rows})
        self.seed, self.deviation, self.noise, self.busy_utilization = seed, deviation, noise, busy_utilization
        self._factors: dict[str, float] = {}

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

    def observe(self, rate: float, rng: random.Random) -> float:
        """What telemetry reports for a round at true rate `rate`."""
        return rate * max(0.0, 1.0 + rng.gauss(0.0, self.noise))

    def predictions(self) -> "TruePredictions":
        return TruePredictions(self)


class TruePredictions:
    """The optimiser's Predictions protocol answered with the true numbers (the oracle)."""

    def __init__(self, truth: Truth):
        self.truth = truth

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self.truth.throughput(workload, gpu_type, num_gpus, consolidated) or None

    def rho(self, workload, partner, gpu_type):
        return self.truth.shared_rho(workload, partner, gpu_type) or None

    def utilization(self, workload, gpu_type):
        return self.truth.utilization(workload, gpu_type)

    def power_w(self, workload, gpu_type):
        return self.truth.measured.power_w(workload, gpu_type)
