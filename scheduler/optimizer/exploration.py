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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .aggregation import aggregate, block_sizes
from .feasibility import layout_fits, margin, memory_fits, uncertainty
from .instance import memory_need, power_per_gpu_alone
from .problem import JobSpec, Problem

# Where telemetry has contradicted the catalog for a workload, its predictions are no better than
# a datasheet guess: their spread is widened by the datasheet estimates' own (gpu_specs'
# UNMEASURED_LOG_SD), in quadrature: log_sd' = sqrt(log_sd^2 + DISAGREED_LOG_SD^2).
DISAGREED_LOG_SD = 0.5
CHANCE_TIE = 1e-9  # chances closer than this are equal (ties go to the least power, then fewest GPUs)

PROBE_REASON = (
    "Probing on {gpu_type} until {until}: no GPU type is known to reach T_min = {t_min:g} steps/s, but the "
    "prediction of {predicted:.3g} steps/s on {gpu_type} is uncertain (chance {chance:.0%} that it reaches T_min), "
    "so a short low-priority run measures it."
)
NO_PROBE_REASON = "No probe now: {why}."
OFF = "exploration is off"
NOTHING_PREDICTED = "no GPU type of the cluster has a prediction for it that fits its memory"
CHANCE_LOW = (
    "the best chance that it reaches T_min = {t_min:g} steps/s is {chance:.1%} (on {gpu_type}), below the "
    "{min_chance:.0%} a probe needs"
)
PROBES_USED = "it was probed {probes} time(s) already, the most a job gets"
RETRY = "it was probed {ago:.0f} s ago; the next probe may start in {wait:.0f} s"
BUDGET = "the GPUs probes may take ({budget} of {gpus}, {share:.0%} of the cluster) are taken"


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
    (log_sd, measured); without it every known throughput counts as measured and exact). Pending:
    no current placement and not a probe already. A configuration is one a solver could offer:
    a type of the cluster (only_gpu_type where set) whose memory fits, k GPUs in blocks within D_j,
    a layout the nodes allow, a known throughput."""
    capacity = aggregate(problem.gpus)
    out: dict[str, list[ThroughputBelief]] = {}
    for job in problem.jobs:
        if job.current is not None or job.probe:
            continue
        need = memory_need(problem, job)
        found = []
        for gpu_type, cap in sorted(capacity.items()):
            if job.only_gpu_type not in (None, gpu_type) or not memory_fits(need, problem.gpu_types[gpu_type]):
                continue
            for k in block_sizes(min(job.max_gpus, cap.gpus)):
                for consolidated in (True, False) if k > 1 else (True,):
                    tau = predictions.tau(job.workload, gpu_type, k, consolidated) if layout_fits(
                        k, consolidated, cap) else None
                    if tau and tau > 0:
                        log_sd, measured = uncertainty(predictions, job.workload, gpu_type, k, consolidated)
                        found.append(ThroughputBelief(gpu_type, k, consolidated, tau, log_sd, measured))
        out[job.id] = found
    return out


def stranded(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]]) -> list[str]:
    """The pending jobs no configuration serves: none of their beliefs reaches T_min (by the
    solvers' rule, the unmeasured-type margin included), in the problem's order. A job with no
    belief at all is stranded too."""
    settings = problem.settings
    return [
        job.id for job in problem.jobs
        if job.id in beliefs and not any(
            b.tau * margin(b.log_sd, b.measured, settings) >= job.min_throughput for b in beliefs[job.id]
        )
    ]


def chance_to_meet(belief: ThroughputBelief, t_min: float, disagreed: bool = False) -> float:
    """P(true throughput >= t_min) when ln(true) ~ Normal(ln tau, log_sd):
    1 - Phi((ln t_min - ln tau) / log_sd). `disagreed` (telemetry has contradicted the catalog for
    the workload) widens log_sd by DISAGREED_LOG_SD in quadrature. No spread: 1 or 0."""
    if t_min <= 0:
        return 1.0
    log_sd = math.hypot(belief.log_sd, DISAGREED_LOG_SD) if disagreed else belief.log_sd
    if log_sd <= 0:
        return 1.0 if belief.tau >= t_min else 0.0
    z = (math.log(t_min) - math.log(belief.tau)) / log_sd
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def choose_probes(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]],
                  history: Mapping[str, ProbeHistory], now: float, settings: ExplorationSettings, *,
                  disagreed: set[str] = frozenset(), probing_gpus: int = 0) -> list[Probe]:
    """The probes to start now: stranded pending jobs whose best chance is at least min_chance,
    that have probes left and waited retry_after_s since their last, within the GPU budget
    (max_probe_share of the cluster's GPUs, at least 1, less `probing_gpus` already probing).
    Each on its most promising type (highest chance, ties to the least power) with the fewest GPUs
    that reach the best chance; where that is more GPUs than the budget has left, the most
    promising configuration within what is left (when its chance is still at least min_chance).
    Jobs take the budget by priority, then chance, then id. Deterministic. `disagreed`: workload
    names."""
    return _decide(problem, beliefs, history, now, settings, disagreed, probing_gpus)[0]


def no_probe_reasons(problem: Problem, beliefs: Mapping[str, Sequence[ThroughputBelief]],
                     history: Mapping[str, ProbeHistory], now: float, settings: ExplorationSettings, *,
                     disagreed: set[str] = frozenset(), probing_gpus: int = 0) -> dict[str, str]:
    """Why each stranded job gets no probe now (job id -> NO_PROBE_REASON), for the same
    arguments as choose_probes: the jobs it chooses are absent."""
    return _decide(problem, beliefs, history, now, settings, disagreed, probing_gpus)[1]


def with_probes(problem: Problem, probes: Sequence[Probe]) -> Problem:
    """The problem with the probed jobs' JobSpecs made probes: probe=True, only_gpu_type the
    probe's type, max_gpus its GPUs."""
    chosen = {probe.job_id: probe for probe in probes}
    return replace(problem, jobs=tuple(
        replace(job, probe=True, only_gpu_type=chosen[job.id].gpu_type, max_gpus=chosen[job.id].num_gpus)
        if job.id in chosen else job
        for job in problem.jobs
    ))


def _decide(problem, beliefs, history, now, settings, disagreed, probing_gpus) -> tuple[list[Probe], dict[str, str]]:
    """(probes, job id -> why not) over the stranded jobs (see choose_probes)."""
    jobs = {job.id: job for job in problem.jobs}
    why: dict[str, str] = {}
    wanted: list[tuple[JobSpec, ThroughputBelief, float]] = []
    for job_id in stranded(problem, beliefs):
        job, past = jobs[job_id], history.get(job_id, ProbeHistory())
        if not settings.enabled:
            why[job_id] = OFF
        elif not beliefs[job_id]:
            why[job_id] = NOTHING_PREDICTED
        elif past.probes >= settings.max_probes_per_job:
            why[job_id] = PROBES_USED.format(probes=past.probes)
        elif past.last_probe_at is not None and now - past.last_probe_at < settings.retry_after_s:
            ago = now - past.last_probe_at
            why[job_id] = RETRY.format(ago=ago, wait=settings.retry_after_s - ago)
        else:
            belief, chance = _most_promising(problem, job, beliefs[job_id], job.workload in disagreed)
            if chance < settings.min_chance:
                why[job_id] = CHANCE_LOW.format(t_min=job.min_throughput, chance=chance, gpu_type=belief.gpu_type,
                                                min_chance=settings.min_chance)
            else:
                wanted.append((job, chance))
    gpus = len(problem.gpus)
    budget = max(1, math.floor(settings.max_probe_share * gpus))
    left = budget - probing_gpus
    probes = []
    for job, _ in sorted(wanted, key=lambda w: (-w[0].priority, -w[1], w[0].id)):
        # Within the GPUs left: a smaller configuration where the most promising one is too large.
        fitting = [b for b in beliefs[job.id] if b.num_gpus <= left]
        belief, chance = _most_promising(problem, job, fitting, job.workload in disagreed) if fitting else (None, 0.0)
        if belief is None or chance < settings.min_chance:
            why[job.id] = BUDGET.format(budget=budget, gpus=gpus, share=settings.max_probe_share)
            continue
        left -= belief.num_gpus
        probes.append(Probe(job.id, belief.gpu_type, belief.num_gpus, chance, belief.tau, now + settings.probe_s))
    return probes, {job_id: NO_PROBE_REASON.format(why=text) for job_id, text in why.items()}


def _most_promising(problem: Problem, job: JobSpec, found: Sequence[ThroughputBelief],
                    disagreed: bool) -> tuple[ThroughputBelief, float]:
    """The belief to probe and its chance: the type whose best configuration has the highest
    chance (ties: the least power there), then on that type the fewest GPUs reaching that chance."""
    chances = [(chance_to_meet(b, job.min_throughput, disagreed), b) for b in found]
    best = max(chance for chance, _ in chances)

    def power(b: ThroughputBelief) -> float:
        return b.num_gpus * power_per_gpu_alone(problem, job.workload, b.gpu_type)

    top = [(c, b) for c, b in chances if c >= best - CHANCE_TIE]
    chance, belief = min(top, key=lambda cb: (power(cb[1]), cb[1].num_gpus, not cb[1].consolidated, cb[1].gpu_type))
    return belief, chance
