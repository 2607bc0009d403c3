"""Exploration in the scheduling round (docs/exploration.md, "In the control plane"): the Django
side of scheduler.optimizer.exploration. Before the solve, the round's problem gets its probes:
jobs whose probe is still running stay probes on their type, probes that ended are planned like
any job (with what telemetry measured meanwhile, through P2), and stranded pending jobs may be
given a new probe. After the solve, the decision's reasons say what a probe measured or why a
stranded job gets none, and the apply step stamps the probe fields (services._apply)."""
import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import Avg

from catalog.models import Measurement, MeasurementSource
from catalog.selectors import latest_estimates_by_workload

from .lifecycle import JobState
from .models import Allocation, Job, JobMeasurement
from .optimizer import Plan, Problem
from .optimizer.exploration import (
    PROBE_REASON,
    ExplorationSettings,
    Probe,
    ProbeHistory,
    beliefs,
    choose_probes,
    no_probe_reasons,
    stranded,
    with_probes,
)

#: A workload's telemetry "disagrees" with the catalog when, on some GPU type (one GPU, alone),
#: the mean of its telemetry measurements or its newest P2 estimate is more than this factor
#: above or below the catalog's measured mean (reference and profiling rows). Well outside the
#: catalog's own spread (repeat measurements agree within about 5 %) and P2's early noise, well
#: inside the 2x drifts that strand jobs. A disagreed workload's probes use a wider belief.
DISAGREEMENT_FACTOR = 1.5
ON_GPUS = (JobState.PLACED.value, JobState.RUNNING.value)
PROBE_ENDED = "Probe on {gpu_type} ended: {measured}, T_min = {t_min:g} steps/s. {reason}"
PROBE_KEPT = "Probe on {gpu_type} ended: {measured}; it reaches T_min, so the job keeps its GPUs."


@dataclass(frozen=True)
class RoundExploration:
    """What exploration did to a round's problem, for its decision and its apply step."""

    probes: dict[str, Probe] = field(default_factory=dict)  # new probes, by job id (started if placed)
    ended: dict[str, str] = field(default_factory=dict)  # job id -> what its ended probe measured
    stopped: dict[str, str] = field(default_factory=dict)  # ended probes that meet T_min nowhere -> why
    no_probe: dict[str, str] = field(default_factory=dict)  # stranded job id -> why it gets no probe
    stranded: tuple[str, ...] = ()  # pending jobs no configuration serves (probed or not)

    def decision(self) -> dict:
        """Its part of the round's SolveRun.decision (/metrics counts the stranded jobs from it)."""
        return {"stranded": list(self.stranded), "probes": sorted(self.probes)}


def exploration_settings() -> ExplorationSettings:
    return ExplorationSettings(
        enabled=settings.GOGH_EXPLORATION_ENABLED,
        probe_s=settings.GOGH_EXPLORATION_PROBE_S,
        min_chance=settings.GOGH_EXPLORATION_MIN_CHANCE,
        max_probe_share=settings.GOGH_EXPLORATION_MAX_PROBE_SHARE,
        retry_after_s=settings.GOGH_EXPLORATION_RETRY_AFTER_S,
        max_probes_per_job=settings.GOGH_EXPLORATION_MAX_PROBES_PER_JOB,
    )


def round_exploration(problem: Problem, *, now: datetime) -> tuple[Problem, RoundExploration]:
    """The problem the round solves, and what exploration did to it. With exploration off, no
    probe starts and the running ones end now (planned like any job)."""
    config = exploration_settings()
    ids = {spec.id for spec in problem.jobs}
    probing = {
        str(job.pk): job for job in Job.objects.exclude(probe_gpu_type="").filter(state__in=ON_GPUS)
        if str(job.pk) in ids
    }
    ongoing = {
        job_id: job for job_id, job in probing.items()
        if config.enabled and job.probe_until is not None and job.probe_until > now
    }
    seen = {job_id: _measured(job) for job_id, job in probing.items() if job_id not in ongoing}
    ended = {job_id: _measured_text(value) for job_id, value in seen.items()}
    reached = {job_id for job_id, value in seen.items()
               if value is not None and value >= probing[job_id].min_throughput}
    problem, stopped = _without_hopeless(_keep_probing(problem, ongoing), probing, ended, reached)
    belief = beliefs(problem, problem.predictions)
    lost = tuple(stranded(problem, belief)) + tuple(stopped)
    if not config.enabled:
        return problem, RoundExploration(ended=ended, stopped=stopped, stranded=lost)
    history = probe_history(problem)
    disagreed = disagreed_workloads({spec.workload for spec in problem.jobs if spec.id in belief})
    held = Allocation.objects.filter(job_id__in=[int(job_id) for job_id in ongoing], end__isnull=True).count()
    arguments = (problem, belief, history, now.timestamp(), config)
    probes = choose_probes(*arguments, disagreed=disagreed, probing_gpus=held)
    reasons = no_probe_reasons(*arguments, disagreed=disagreed, probing_gpus=held)
    return with_probes(problem, probes), RoundExploration(
        probes={probe.job_id: probe for probe in probes}, ended=ended, stopped=stopped, no_probe=reasons,
        stranded=lost,
    )


def _keep_probing(problem: Problem, ongoing: dict[str, Job]) -> Problem:
    """A job whose probe goes on stays a probe on its type and its GPUs' count."""
    if not ongoing:
        return problem
    return replace(problem, jobs=tuple(
        replace(spec, probe=True, only_gpu_type=ongoing[spec.id].probe_gpu_type,
                max_gpus=len(spec.current.gpu_ids) if spec.current else spec.max_gpus)
        if spec.id in ongoing else spec
        for spec in problem.jobs
    ))


def _without_hopeless(problem: Problem, probing: dict[str, Job], ended: dict[str, str],
                      reached: set[str]) -> tuple[Problem, dict[str, str]]:
    """The problem without the jobs whose probe ended and that no configuration is now predicted
    to serve (with what the probe measured folded in by P2), and why each of those stops. Left
    in, the solvers would keep them: a placed job's current option always counts as meeting its
    T_min, so that a changed prediction alone never stops running work; a probe is the exception,
    a measurement whose result decides whether the job runs on. A probe that itself measured
    T_min or more (`reached`) never stops its job, whether or not P2 has caught up with it yet
    (its update follows each measurement as a task of its own). A job whose probe measured too
    little but that some other configuration is predicted to serve is planned as if pending: no
    current placement holds it where the probe found it too slow, so it moves there or stops."""
    judged = set(ended) - reached
    if not judged:
        return problem, {}
    as_pending = replace(problem, jobs=tuple(replace(spec, current=None) for spec in problem.jobs if spec.id in judged))
    belief = beliefs(as_pending, problem.predictions)
    hopeless, stopped = set(stranded(as_pending, belief)), {}
    for spec in as_pending.jobs:
        if spec.id not in hopeless:
            continue
        best = max(belief.get(spec.id, ()), key=lambda b: b.tau, default=None)
        predicted = (f"the best prediction is {best.tau:.3g} steps/s on {best.num_gpus} x {best.gpu_type}"
                     if best else "no GPU type has a prediction")
        stopped[spec.id] = PROBE_ENDED.format(
            gpu_type=probing[spec.id].probe_gpu_type, measured=ended[spec.id], t_min=spec.min_throughput,
            reason=f"Not enough: {predicted}.",
        )
    return replace(problem, jobs=tuple(
        replace(spec, current=None) if spec.id in judged else spec
        for spec in problem.jobs if spec.id not in stopped
    )), stopped


def probe_history(problem: Problem) -> dict[str, ProbeHistory]:
    """The probes so far of the problem's jobs that had one, on the round's clock (epoch seconds)."""
    ids = {spec.id for spec in problem.jobs}
    rows = Job.objects.filter(state=JobState.PENDING.value, probes__gt=0).values_list("pk", "probes", "last_probe_at")
    return {
        str(pk): ProbeHistory(probes=probes, last_probe_at=at.timestamp() if at else None)
        for pk, probes, at in rows if str(pk) in ids
    }


def disagreed_workloads(names: set[str]) -> set[str]:
    """The named workloads whose telemetry contradicts the catalog (DISAGREEMENT_FACTOR): two
    aggregate reads of the measurements, one of the newest estimates."""
    catalog, observed = {}, {}
    means = (
        Measurement.objects.filter(workload__name__in=names, num_gpus=1, partner__isnull=True, throughput__gt=0)
        .values_list("workload__name", "gpu_type__name", "source").annotate(mean=Avg("throughput")).order_by()
    )
    for workload, gpu_type, source, mean in means:
        if source in (MeasurementSource.REFERENCE, MeasurementSource.PROFILING):
            catalog.setdefault((workload, gpu_type), []).append(mean)
        elif source == MeasurementSource.TELEMETRY:
            observed[workload, gpu_type] = mean
    for workload, estimates in latest_estimates_by_workload(names=names).items():
        if not estimates.get("observed"):
            continue  # P1's: what the catalog taught, not telemetry
        for (gpu_type, num_gpus, _consolidated), tau in zip(estimates["configs"], estimates["tau"]):
            if int(num_gpus) == 1 and (workload, gpu_type) not in observed:
                observed[workload, gpu_type] = float(tau)
    return {
        workload
        for (workload, gpu_type), value in observed.items()
        if (means := catalog.get((workload, gpu_type))) and _disagrees(value, sum(means) / len(means))
    }


def _disagrees(observed: float, catalog: float) -> bool:
    return observed > 0 and catalog > 0 and abs(math.log(observed / catalog)) > math.log(DISAGREEMENT_FACTOR)


def _measured(job: Job) -> float | None:
    """What the probe of `job` measured: its newest observed throughput since the probe started."""
    since = job.last_probe_at or job.placed_at
    return (
        JobMeasurement.objects.filter(job=job, measurement__observed_at__gte=since)
        .order_by("-measurement__observed_at", "-measurement_id").values_list("measurement__throughput", flat=True)
        .first()
    )


def _measured_text(value: float | None) -> str:
    return "nothing measured" if value is None else f"measured {value:.3g} steps/s"


def explained(allocation: Plan, exploration: RoundExploration, problem: Problem) -> Plan:
    """The decision with exploration's reasons: a stranded job without a probe says why (after
    the solver's reason), and a job whose probe ended and that is not placed again says what
    the probe measured against its T_min (it goes back to pending with that reason)."""
    if not (exploration.no_probe or exploration.ended):
        return allocation
    reasons = dict(allocation.reasons) | exploration.stopped
    t_min = {spec.id: spec.min_throughput for spec in problem.jobs}
    gpu_type = dict(Job.objects.filter(pk__in=[int(job_id) for job_id in exploration.ended])
                    .values_list("pk", "probe_gpu_type"))
    for job_id, reason in allocation.reasons.items():
        if job_id in exploration.ended:
            reasons[job_id] = PROBE_ENDED.format(gpu_type=gpu_type.get(int(job_id), "?"),
                                                 measured=exploration.ended[job_id], t_min=t_min[job_id], reason=reason)
        elif job_id in exploration.no_probe:
            reasons[job_id] = f"{reason} {exploration.no_probe[job_id]}"
    return replace(allocation, reasons=reasons)


def probe_fields(job: Job, exploration: RoundExploration, *, now: datetime) -> dict:
    """The probe fields the round changes on `job`, which it places (a field -> its new value):
    a probe chosen for it starts (its type, end, count and start); a probe that ended on a job
    that meets its T_min now ends, and its state reason says what it measured. {} when nothing
    changes. (A job sent back to pending leaves its probe: services._stamp_transition.)"""
    job_id = str(job.pk)
    probe = exploration.probes.get(job_id)
    if probe is not None and not job.probe_gpu_type:
        return {
            "probe_gpu_type": probe.gpu_type,
            "probe_until": datetime.fromtimestamp(probe.until, tz=UTC),
            "probes": job.probes + 1,
            "last_probe_at": now,
        }
    if job.probe_gpu_type and job_id in exploration.ended:
        return {"probe_gpu_type": "", "probe_until": None,
                "state_reason": PROBE_KEPT.format(gpu_type=job.probe_gpu_type, measured=exploration.ended[job_id])}
    return {}


def probe_reason(probe: Probe, t_min: float) -> str:
    """The state reason of a job whose probe starts."""
    until = datetime.fromtimestamp(probe.until, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return PROBE_REASON.format(gpu_type=probe.gpu_type, until=until, predicted=probe.predicted, t_min=t_min,
                               chance=probe.chance)
