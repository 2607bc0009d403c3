"""Exploration: a bounded probe for a job the predictions call impossible (pure Python, no Django).

The optimiser admits a job only on a configuration predicted to reach its T_min. When no
configuration is (the job is *stranded*), the job never runs, so telemetry never observes it and
the catalog is never corrected: a catalog that is wrong about a workload stays wrong. A probe
breaks that loop: a short run of the stranded job on the GPU type most likely to serve it, at
the lowest admission level (after every other job, never displacing one), so that its observed
throughput can correct the prediction. Only an uncertain prediction is worth a probe: the chance
that the true throughput reaches T_min is read from the prediction's spread (a log-normal belief,
docs/exploration.md), and a probe is spent only where that chance is at least `min_chance`.

The control plane (and the simulation) keep the probe history per job and call `choose_probes`
once a round, then `with_probes` turns the chosen probes into the JobSpecs the solvers see
(`JobSpec.probe`, `JobSpec.only_gpu_type`).
"""
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .problem import Problem

PROBE_REASON = (
    "Probing on {gpu_type} until {until}: predicted {predicted:.3g} steps/s, below T_min = {t_min:g}, but the "
    "prediction is uncertain (chance {chance:.0%} that it reaches T_min); a short low-priority run measures it."
)
NO_PROBE_REASON = "No probe now: {why}."


@dataclass(frozen=True)
class ExplorationSettings:
    enabled: bool = True
    probe_s: float = 600.0  # one probe's length
    min_chance: float = 0.05  # no probe below this chance that the job can meet T_min
    max_probe_share: float = 0.1  # of the cluster's GPUs probing at once (at least 1 GPU)
    retry_after_s: float = 3600.0  # between two probes of one job
    max_probes_per_job: int = 3


@dataclass(frozen=True)
class ThroughputBelief:
    """One configuration of one job, as predicted."""

    gpu_type: str
    num_gpus: int
    consolidated: bool
    tau: float  # predicted steps/s (median)
    log_sd: float  # log-space standard deviation of that prediction
    measured: bool  # backed by a measurement of this workload on this type


@dataclass(frozen=True)
class ProbeHistory:
    probes: int = 0
    last_probe_at: float | None = None  # seconds on the caller's clock (same as `now`)


@dataclass(frozen=True)
class Probe:
    job_id: str
    gpu_type: str
    num_gpus: int
    chance: float  # P(true throughput >= T_min) under the belief
    predicted: float
    until: float  # now + probe_s


def beliefs(problem: Problem, predictions) -> dict[str, list[ThroughputBelief]]:
    """Every pending job's configurations (job id -> beliefs) from `predictions` (the object the
    solvers read; its optional `uncertainty(workload, gpu_type, num_gpus, consolidated)` gives
    (log_sd, measured); without it every known throughput counts as measured and exact)."""
    raise NotImplementedError


def stranded(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]]) -> list[str]:
    """The pending jobs no configuration serves: none of their beliefs reaches T_min (in the
    problem's order)."""
    raise NotImplementedError


def chance_to_meet(belief: ThroughputBelief, t_min: float, disagreed: bool = False) -> float:
    """P(true throughput >= t_min) when ln(true) ~ Normal(ln tau, log_sd); `disagreed` (telemetry
    has contradicted the catalog for the workload) widens log_sd (docs/exploration.md)."""
    raise NotImplementedError


def choose_probes(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]],
                  history: Mapping[str, ProbeHistory], now: float, settings: ExplorationSettings, *,
                  disagreed: set[str] = frozenset(), probing_gpus: int = 0) -> list[Probe]:
    """The probes to start now: stranded pending jobs whose best chance is at least min_chance,
    that have probes left and waited retry_after_s since their last, within the GPU budget
    (max_probe_share of the cluster's GPUs, at least 1, less `probing_gpus` already probing).
    Each on its most promising type (highest chance, ties to the least power) with the fewest GPUs
    that reach the best chance. Deterministic. `disagreed`: workload names."""
    raise NotImplementedError


def no_probe_reasons(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]],
                     history: Mapping[str, ProbeHistory], now: float, settings: ExplorationSettings, *,
                     disagreed: set[str] = frozenset(), probing_gpus: int = 0) -> dict[str, str]:
    """Why each stranded job gets no probe now (job id -> NO_PROBE_REASON), for the same
    arguments as choose_probes: the jobs it chooses are absent."""
    raise NotImplementedError


def with_probes(problem: Problem, probes: Sequence[Probe]) -> Problem:
    """The problem with the probed jobs' JobSpecs made probes: probe=True, only_gpu_type the
    probe's type, max_gpus its GPUs."""
    raise NotImplementedError
