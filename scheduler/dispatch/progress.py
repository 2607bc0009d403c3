"""What an agent reports of a running job: progress, its end, and the throughput it observed.

The job's state moves only through scheduler.services.job_transition (placed -> running on
the first report, running -> succeeded / failed at the end, or back to pending when its run
stops to be resumed: stops.py). What a report must not contradict (the job's checkpoint) and
how its progress is stored are in report_rules.py. Observed throughput becomes a
catalog Measurement (source telemetry, written by catalog.services.measurement_record and
linked to the job by a JobMeasurement) at most once per GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S
per job and once at its end (unless the last is younger than its window), so one long job
cannot flood the catalog's sliding window; each
one is sent on to P2 (catalog.tasks.prediction_refine), which refines the job's predictions.
A service replica's report may carry its traffic (docs/services.md), recorded with the
report (scheduler.serving.traffic); its steps per second follow its traffic, not its GPU's
speed, so they are no catalog measurement.
"""
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Avg, Max, Prefetch
from django.utils import timezone

from catalog.measurement_limits import limit_problems
from catalog.models import MeasurementSource
from catalog.services.measurements import measurement_record
from gogh_web.activity import announce, gpus_where
from gogh_web.outbox.services import outbox_enqueue
from telemetry.models import GpuSample
from telemetry.services.access import check_is_agent, may_report

from ..lifecycle import TERMINAL, JobState
from ..live import job_changed
from ..models import Allocation, Job, JobInterruption, JobMeasurement, SolveTrigger
from ..profiling.services import campaign_report
from ..services import job_transition, scheduling_round_request
from ..serving.traffic import service_traffic_record
from . import stops
from .at_default_limit import fractions_at, limit_of
from .limit_observations import learnt_fractions, limit_observation_from
from .report_rules import NotAssigned, Report, check_report, record_progress

RUNNING, SUCCEEDED, FAILED, PREEMPTED = "running", "succeeded", "failed", "preempted"
REPORT_STATUSES = (RUNNING, SUCCEEDED, FAILED, PREEMPTED)
#: Power and utilization of a measurement: the mean of the job's GPUs over this last stretch,
#: the agent's throughput window (telemetry.agent.runner.RATE_WINDOW_S), and never from before
#: the job started (on a real H200 a 60 s window put the idle GPU's 80 W at 0.4% utilization
#: beside the job's 30 steps/s in its first measurement; see _record_measurement).
SAMPLE_WINDOW_S = 30
#: The newest sample may be this much older than the report (the agent uploads every 5 s by
#: default): windows anchored on it keep this margin from the job's start.
UPLOAD_LAG = timedelta(seconds=10)


@transaction.atomic
def job_progress_report(
    *, agent_user, job_id: int, status: str, steps: int, total_steps: int | None = None,
    steps_per_s: float | None = None, exit_code: int | None = None, message: str = "",
    checkpoint_step: int | None = None, checkpoint_path: str = "", measurements: list[str] | None = None,
    traffic: dict | None = None, now=None,
) -> Job:
    """Record an agent's report on a job allocated to its node; the job as it is now.
    `steps` is where the run is (Job.current_step) and only ever raises Job.steps_done;
    `total_steps` fills Job.total_steps if it is empty; a newer checkpoint is recorded.

    A report the rules refuse (dispatch.report_rules: a step below the last checkpoint, a
    checkpoint beyond the job's end or older than the last, a job allocated to another agent's
    nodes) raises ValidationError and stores nothing. A "preempted" report is a run that
    stopped to be resumed: from the node that last held the job after a round took it away, a
    handover (dispatch.stops.handover); from a job still allocated here, it exited by itself
    (dispatch.stops.stopped). Other final reports from the node that last held the job are
    late ends (late_end). NotAssigned when the job has no open allocation here to report on.
    `measurements`: the GOGH_MEASUREMENT lines (their JSON) of a profiling campaign's job since
    its last report, recorded by scheduler.profiling; such a job's steps are suite cases, so its
    rate is no telemetry measurement of its workload. Other jobs' lines are ignored.
    `traffic` ({"request_rate_rps", "p99_ms"}): a service replica's traffic, recorded by
    scheduler.serving.traffic in this transaction; from a job of no service it refuses the
    whole report (ValidationError naming "traffic"), so nothing of it is stored."""
    check_is_agent(agent_user)
    now = now or timezone.now()
    job = Job.objects.select_for_update().select_related("workload").filter(pk=job_id).first()
    if job is None:
        raise ValidationError({"job": [f"No job {job_id}."]})
    report = Report(status=status, steps=steps, total_steps=total_steps, checkpoint_step=checkpoint_step,
                    checkpoint_path=checkpoint_path)
    allocations = list(
        Allocation.objects.filter(job=job, end__isnull=True)
        .select_related("gpu__node", "gpu__gpu_type")
        .prefetch_related(Prefetch("partners", queryset=Job.objects.select_related("workload")))
    )
    here = any(may_report(allocation.gpu.node, agent_user) for allocation in allocations)
    if status == PREEMPTED and (job.handover_until is not None or not here) and stops.ran_last_on(job, agent_user):
        return stops.handover(job, report, next_run_waits=here, now=now)
    if not here:
        return _not_here(job, report, agent_user, allocations, message=message, now=now)
    if status != SUCCEEDED and job.handover_until is not None and job.handover_until > now:
        # its next run is held back until the last one stops, so this is the last one (or a
        # node that was never told to run it): only its success counts (a late success)
        raise NotAssigned(f"Job {job_id} was moved; its run here is being stopped.")
    if traffic is not None:  # first: a refusal must come before anything of the report is stored or announced
        _record_traffic(job, traffic, now)
    job, report = run_report(job, report, allocations, steps_per_s=steps_per_s, measurements=measurements or [],
                             started_by="its node agent", now=now)
    if status == PREEMPTED:
        return stops.stopped(job, report, exit_code=exit_code, message=message, now=now)
    if status in (SUCCEEDED, FAILED):
        job_ended(job, status, steps=steps, exit_code=exit_code, message=message, now=now)
    job.refresh_from_db()
    job_changed(job)  # progress, total steps, observed throughput
    return job


def run_report(job: Job, report: Report, allocations: list[Allocation], *, steps_per_s: float | None,
               measurements: list[str], started_by: str, now) -> tuple[Job, Report]:
    """What a report of the job's current run stores, whoever reads the run (its node's agent,
    or the executor sync from the run's output): checked by the report rules (ValidationError,
    nothing stored, for a running report they refuse), its progress and checkpoint, the job
    started on its first report, the throughput observed, a campaign's suite lines. The job and
    the report as stored (a final one without what the rules refuse of it)."""
    report = check_report(job, report)
    record_progress(job, report, now)
    if job.state == JobState.PLACED.value:
        job = job_transition(job=job, to=JobState.RUNNING.value, reason=f"Started by {started_by}.", now=now)
        announce("job %s started on %s", job.pk, gpus_where(allocation.gpu for allocation in allocations))
    if steps_per_s is not None:
        _restart_measured(job, report.steps, steps_per_s, now)
        if job.campaign_id is None and job.service_id is None and _measurement_due(
                job, now, final=report.status != RUNNING):
            _record_measurement(job, allocations, steps_per_s, now)
    if job.campaign_id is not None:
        _campaign_results(job, allocations, measurements, now)
    return job, report


def _record_traffic(job: Job, traffic: dict, now) -> None:
    """A replica's traffic report; its refusal names the report's field "traffic" (or
    "traffic.<field>"), as the agent reads it."""
    try:
        service_traffic_record(job=job, request_rate_rps=traffic.get("request_rate_rps"),
                               p99_ms=traffic.get("p99_ms"), now=now)
    except ValidationError as exc:
        raise ValidationError({
            field if field == "traffic" else f"traffic.{field}": messages
            for field, messages in exc.message_dict.items()
        }) from exc


def _campaign_results(job: Job, allocations: list[Allocation], lines: list[str], now) -> None:
    """A campaign job's report: its suite lines measure the GPU type of its placement."""
    gpu_types = {allocation.gpu.gpu_type for allocation in allocations}
    campaign_report(job=job, gpu_type=gpu_types.pop() if len(gpu_types) == 1 else None,
                    num_gpus=len(allocations), lines=lines, now=now)


def _not_here(job: Job, report: Report, agent_user, allocations, *, message: str, now) -> Job:
    """A report on a job with no open allocation on the reporting agent's nodes: a late end
    from the node that last held it (late_end); a job taken away from it, or ended, that its
    agent should stop (NotAssigned); else a job this node never held (ValidationError)."""
    last_here = _last_held_by(job, agent_user)
    if report.status != RUNNING and last_here:
        return late_end(job, report, message=message, now=now)
    if not allocations or last_here:
        raise NotAssigned(f"Job {job.pk} has no open allocation on this node; stop it.")
    raise ValidationError({"job": [f"Job {job.pk} is not assigned to this node; it runs elsewhere."]})


def job_ended(job: Job, status: str, *, steps: int, exit_code: int | None, message: str, now) -> None:
    """The run ended (succeeded or failed), as its agent or its executor says: the job ends,
    its GPUs are free for pending jobs."""
    if status == SUCCEEDED:
        job = job_transition(job=job, to=JobState.SUCCEEDED.value, reason=message or "Exited with status 0.", now=now)
    else:
        reason = message or f"Exited with status {exit_code}."
        job = job_transition(job=job, to=JobState.FAILED.value, reason=reason, now=now)
    scheduling_round_request(trigger=SolveTrigger.FINISH)
    announce("job %s %s after %s steps: %s", job.pk, job.state, max(steps, job.steps_done), job.state_reason)


def _restart_measured(job: Job, steps: int, steps_per_s: float, now) -> None:
    """What the job's last restart cost (JobInterruption.overhead_s), once its run made
    progress beyond the step it resumed at and its agent gives a rate: the seconds from the
    run's start to now, less those the progress took at that rate (start, loading the
    checkpoint and warming up are what remains; at least 0). The rounds weigh moves with it
    (selectors.restart_overheads). Only for a restarted job's latest interruption, once, and
    not by the report that starts the run (its start is then unknown: the agent reports a job
    as it starts it, and a first report beyond the resume step came later)."""
    if not (job.restarts and steps > job.resume_step and steps_per_s > 0 and job.started_at
            and job.started_at < now):
        return
    last = JobInterruption.objects.filter(job=job).order_by("-at", "-id").first()
    if last is None or last.resumed_at is not None or last.at > job.started_at:
        return
    progress_s = (steps - job.resume_step) / steps_per_s
    last.overhead_s = max(0.0, (now - job.started_at).total_seconds() - progress_s)
    last.resumed_at = job.started_at
    last.save(update_fields=["overhead_s", "resumed_at"])


def _last_held_by(job: Job, agent_user) -> bool:
    """Whether the job's most recently closed allocation was on a node of `agent_user`: that
    node ran the job last before the control plane took it away."""
    last = Allocation.objects.filter(job=job, end__isnull=False).select_related("gpu__node").order_by(
        "-end", "-start", "-pk"
    ).first()
    return last is not None and may_report(last.gpu.node, agent_user)


def late_end(job: Job, report: Report, *, message: str, now) -> Job:
    """The end of a job reported by the node that last held it (or read from the executor's
    run there), after the job left that node.

    Success is kept (scheduler.lifecycle, "late success"): the job ran to its end there, so a
    job not yet ended ends as succeeded, and any new allocation closes with it, so the new copy
    is stopped at its agent's next poll instead of running the job a second time. The same end
    reported again (its answer was lost on the way) is answered with the job as it is. A late
    failure is refused (NotAssigned): the job is already on its way to run again."""
    if job.state == report.status:
        return job
    if report.status != SUCCEEDED or job.state in {state.value for state in TERMINAL}:
        raise NotAssigned(f"Job {job.pk} has no open allocation on this node; stop it.")
    report = check_report(job, report)
    record_progress(job, report, now)
    reason = f"{message or 'Exited with status 0.'} Reported by the node that last ran it, after it was taken away."
    job = job_transition(job=job, to=JobState.SUCCEEDED.value, reason=reason[:300], now=now)
    scheduling_round_request(trigger=SolveTrigger.FINISH)
    announce("job %s succeeded after %s steps: %s", job.pk, max(report.steps, job.steps_done), job.state_reason)
    job.refresh_from_db()
    job_changed(job)
    return job


def measurement_reference(job_id: int) -> str:
    """The provenance of a job's telemetry measurements, for people reading the catalog (the
    job's JobMeasurement links find them)."""
    return f"telemetry: job {job_id}"


def _measurement_due(job: Job, now, *, final: bool) -> bool:
    """Every interval, and at the end unless the last one is so recent that its window (the
    agent's, SAMPLE_WINDOW_S) mostly overlaps: that would count nearly the same observation
    twice (seen on a real H200: two identical measurements a second apart)."""
    seconds = SAMPLE_WINDOW_S if final else settings.GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S
    interval = timedelta(seconds=seconds)
    return not JobMeasurement.objects.filter(job=job, measurement__observed_at__gt=now - interval).exists()


def _record_measurement(job: Job, allocations: list[Allocation], steps_per_s: float, now) -> None:
    """The observed throughput of the whole job on its GPUs, with their mean power and
    utilization over the last SAMPLE_WINDOW_S. Skipped for a job spread over several GPU types
    (a catalog record has one), for a job sharing its GPU with more than one job (a catalog
    record is alone or a pair: Gavel measured pairs only, and a group's rate recorded as a
    pair's would teach the predictors a wrong pair), while a partner change is younger than the
    window (the agent's rate mixes both configurations), and when its partner has not been
    running a whole window beside it (just placed, still starting, or ended: the rate is then
    mostly its own alone).
    Power and utilization stay empty until the job has run a whole window in this
    configuration: before that the window holds its start-up (CUDA initialisation, cuDNN
    autotuning: 79 W at 0.1% utilization beside 33 steps/s on an H200), not what it draws while
    it trains. Durations come from the server's clock and sample windows are anchored on the
    newest sample, so an agent whose clock is off does not shift them. Measured below the
    default power limit, throughput and power are recorded as at the default
    (at_default_limit.py, by the model's fractions corrected by the workload's limit readings,
    limit_observations.py), or not at all where the power-limit model knows nothing there. A job
    alone on one GPU is also a reading of its workload's limit curve on the type."""
    gpu_types = {allocation.gpu.gpu_type for allocation in allocations}
    if len(gpu_types) != 1 or steps_per_s < 0:
        return
    window = timedelta(seconds=SAMPLE_WINDOW_S)
    started = job.started_at or now
    partners = list({p.pk: p for allocation in allocations for p in allocation.partners.all()}.values())
    if len(partners) > 1:
        return
    configured = max(allocation.start for allocation in allocations)  # same GPUs and partners since
    if configured > started and now - configured < window:
        return
    partner = partners[0] if partners else None
    if partner is not None and not (
        partner.state == JobState.RUNNING.value and partner.started_at and partner.started_at <= now - window
    ):
        return
    span = now - max(started, configured)
    gpus = [a.gpu for a in allocations]
    latest = GpuSample.objects.filter(gpu__in=gpus).aggregate(latest=Max("ts"))["latest"]
    recent = {"power_w": None, "utilization": None, "memory_mb": None}
    if latest is not None:
        mine = GpuSample.objects.filter(gpu__in=gpus, ts__gt=latest - span + UPLOAD_LAG, ts__lte=latest)
        recent["memory_mb"] = mine.aggregate(memory_mb=Max("memory_used_mb"))["memory_mb"]
        if span >= window + UPLOAD_LAG:
            recent.update(mine.filter(ts__gt=latest - window).aggregate(power_w=Avg("power_w"),
                                                                       utilization=Avg("utilization")))
    gpu_type = gpu_types.pop()
    readings = {"power_w": recent["power_w"], "utilization": recent["utilization"],
                "memory_gb": recent["memory_mb"] / 1024 if recent["memory_mb"] is not None else None}
    limit_w = limit_of(allocations)
    fractions = fractions_at(job.workload.name, gpu_type.name, limit_w)
    if fractions is None:
        return
    if steps_per_s > 0:
        limit_observation_from(job, allocations, limit_w, fractions, steps_per_s, readings["power_w"],
                               reference=measurement_reference(job.pk), now=now)
    if limit_w is not None:
        speed, power = learnt_fractions(job.workload.name, gpu_type.name, fractions)
        steps_per_s /= speed
        if readings["power_w"] is not None:
            readings["power_w"] /= power
    # Readings beyond what the GPU type can draw or hold (samples take up to 10 kW and 10 TB)
    # are left out rather than taught to the catalog: a workload would never fit again.
    for field in limit_problems(now=now, num_gpus=len(allocations), gpu_memory_gb=gpu_type.memory_gb,
                                power_w=readings["power_w"], memory_gb=readings["memory_gb"]):
        readings[field] = None
    measurement = measurement_record(
        workload=job.workload,
        gpu_type=gpu_type,
        num_gpus=len(allocations),
        consolidated=len({a.gpu.node_id for a in allocations}) == 1,
        partner=partner.workload if partner else None,
        throughput=steps_per_s,
        **readings,
        source=MeasurementSource.TELEMETRY,
        reference=measurement_reference(job.pk),
        observed_at=now,
    )
    JobMeasurement.objects.create(job=job, measurement=measurement)
    _send_refinement(measurement.pk, job.pk)


def _send_refinement(measurement_id: int, job_id: int) -> None:
    """P2: the job's predictions learn from what was just observed (a Celery task, written to
    the outbox in this transaction and sent once it commits)."""
    outbox_enqueue(task="catalog.tasks.prediction_refine", args=[measurement_id, job_id])
