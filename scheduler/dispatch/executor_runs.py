"""Phase 4 of the executor sync: each run not yet settled, against what the executor says of
it. The job moves through the same rules as the agent path (progress.run_report, stops,
progress.job_ended): started -> running, its GPUs re-pointed to those the executor gave, its
output's contract lines -> progress and checkpoints, its end -> the job's end, or back to
pending to resume from its checkpoint. A run that GOGH stopped (moved, preempted, requeued,
cancelled) is a handover once it ends (stops.handover): its last checkpoint counts, and the
job's next run may be submitted. The run is then settled: nothing of it is applied twice.

A run is the job's current one while the job is placed or running, was placed before the run
was submitted (Job.placed_at changes whenever it is placed anew) and still holds GPUs on the
run's node; any other run is stale and is being stopped (executor_stops.py)."""
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q

from gogh_web.activity import announce
from telemetry.models import Gpu

from ..executors.base import (
    CANCELLED,
    ENDED,
    FAILED,
    NODE_FAIL,
    PENDING,
    PREEMPTED,
    RESUME_EXIT_CODE,
    RUNNING,
    SUCCEEDED,
    TIMEOUT,
    RunStatus,
)
from ..lifecycle import JobState
from ..live import job_changed
from ..models import Allocation, ExecutorRun, InterruptionKind, Job, SolveTrigger
from ..services import job_transition, scheduling_round_request
from . import stops
from .executor_output import output_grew, output_read
from .progress import job_ended, late_end, run_report
from .report_rules import NotAssigned, Report, check_report, record_steps

_ON_A_GPU = (JobState.PLACED.value, JobState.RUNNING.value)
#: The shortest stretch of a run's progress its throughput is measured over (two syncs' reads).
RATE_MIN_S = 10.0
#: What _news reads of a run and its job (the job's command, environment and the rest are not).
_NEWS_FIELDS = ("id", "job_id", "external_id", "state", "native_state", "reason", "gpu_indexes", "node_id",
                "stop_requested_at", "submitted_at", "output_path", "output_offset", "job__state", "job__placed_at",
                "job__tenant_id", "job__campaign_id", "job__total_steps", "job__checkpoint_step", "rate_step",
                "rate_at")
#: The report status of a run's end, in the agent path's words (progress.REPORT_STATUSES).
_REPORTED = {SUCCEEDED: "succeeded", FAILED: "failed", TIMEOUT: "failed"}


def open_nodes(job_ids) -> dict[int, set[int]]:
    """{job id: ids of the nodes its open allocations are on}, in one query."""
    nodes: dict[int, set[int]] = {}
    for job_id, node_id in Allocation.objects.filter(job_id__in=job_ids, end__isnull=True).values_list(
        "job_id", "gpu__node_id"
    ):
        nodes.setdefault(job_id, set()).add(node_id)
    return nodes


def not_current(executor: str):
    """The unsettled runs of `executor` that are not their job's current one (is_current's
    negation, as one query)."""
    on_its_node = Allocation.objects.filter(job=OuterRef("job"), end__isnull=True, gpu__node=OuterRef("node"))
    return ExecutorRun.objects.filter(executor=executor, settled_at__isnull=True).filter(
        Q(stop_requested_at__isnull=False) | ~Q(job__state__in=_ON_A_GPU) | Q(job__placed_at__isnull=True)
        | Q(job__placed_at__gt=F("submitted_at")) | ~Exists(on_its_node)
    )


def is_current(run: ExecutorRun, job: Job, nodes: set[int]) -> bool:
    """Whether `run` is the job's current run (the module's docstring), not one being stopped."""
    return (
        run.stop_requested_at is None and job.state in _ON_A_GPU and run.node_id in nodes
        and job.placed_at is not None and job.placed_at <= run.submitted_at
    )


def runs_apply(statuses: dict[str, RunStatus], *, executor: str, waited: set[str], now, stats: dict) -> None:
    """Apply the snapshot's `statuses` (external id -> status) to every unsettled run of
    `executor` it was taken for (`waited`). Runs where nothing changed (same state and GPUs,
    no new output, nothing for their job to do) are passed over without a write, so a steady
    sync costs a few queries."""
    runs = [run for run in ExecutorRun.objects.filter(executor=executor, settled_at__isnull=True)
            .select_related("job").only(*_NEWS_FIELDS) if run.external_id in waited]
    nodes = open_nodes([run.job_id for run in runs])
    steps: dict[int, int] = {}
    offsets: dict[int, int] = {}
    for run in runs:
        status = statuses.get(run.external_id)
        held = nodes.get(run.job_id, set())
        if not _news(run, status, held):
            continue
        if _steps_only(run, status, held, steps, offsets, stats, now):
            continue
        _apply_locked(run.pk, status, now, stats)
    _record_steps(runs, steps, offsets)


def _steps_only(run: ExecutorRun, status: RunStatus | None, nodes: set[int], steps: dict[int, int],
                offsets: dict[int, int], stats: dict, now) -> bool:
    """The common news of a running job's run, new progress lines and nothing else (no
    checkpoint, length, measurement, nor change of state or GPUs), noted in `steps` and
    `offsets` for _record_steps (through the same report rules); False for any other news,
    and for a throughput due, which _apply_locked applies."""
    job = run.job
    if not (status is not None and status.state == RUNNING and job.state == JobState.RUNNING.value
            and job.campaign_id is None
            and is_current(run, job, nodes) and list(status.gpu_indexes) == list(run.gpu_indexes)
            and (status.native_state, status.reason) == (run.native_state, run.reason)):
        return False
    news = output_read(run.output_path, run.output_offset)
    if news.checkpoint is not None or news.measurements or news.total is not None and job.total_steps is None \
            or _rate_due(run, news.step, now, final=False) is not None:
        return False
    offsets[run.pk] = news.offset
    if news.step is not None:
        try:
            check_report(job, Report(status="running", steps=news.step))
            steps[job.pk] = news.step
            stats["progressed"] = stats.get("progressed", 0) + 1
        except ValidationError:
            stats["reports_refused"] = stats.get("reports_refused", 0) + 1
    return True


@transaction.atomic
def _record_steps(runs: list[ExecutorRun], steps: dict[int, int], offsets: dict[int, int]) -> None:
    """The progress _steps_only noted, and how far each run's output was read, in a few
    statements; the jobs' pages hear of it."""
    record_steps(steps)
    table = connection.ops.quote_name(ExecutorRun._meta.db_table)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET output_offset = %s WHERE id = %s",
                           [(offset, run_id) for run_id, offset in offsets.items()])
    for run in runs:
        if run.job_id in steps:
            job_changed(run.job)


def _news(run: ExecutorRun, status: RunStatus | None, nodes: set[int]) -> bool:
    """Whether `status` or the run's output says something the database does not know yet."""
    if status is None or status.state in ENDED:
        return True
    changed = (status.state, status.native_state, status.reason) != (run.state, run.native_state, run.reason)
    started = status.state != PENDING
    current = is_current(run, run.job, nodes)
    return (
        changed or (started and list(status.gpu_indexes) != list(run.gpu_indexes))
        or (current and started and run.job.state == JobState.PLACED.value)
        or (current and output_grew(run.output_path, run.output_offset))
    )


@transaction.atomic
def _apply_locked(run_id: int, status: RunStatus | None, now, stats: dict) -> None:
    run = ExecutorRun.objects.select_for_update().filter(pk=run_id, settled_at__isnull=True).first()
    if run is None:
        return  # another sync settled it meanwhile
    job = Job.objects.select_for_update().select_related("workload").get(pk=run.job_id)
    current = is_current(run, job, open_nodes([job.pk]).get(job.pk, set()))
    read_back = list(run.gpu_indexes)
    _stamp(run, status, now)
    if status is not None and status.state != PENDING and current:
        if list(status.gpu_indexes) != read_back:
            _repoint(job, run, status.gpu_indexes)
        job = _progress(job, run, status, now, stats)
    if status is None or status.state in ENDED:
        if current:
            _ended(job, run, status, now, stats)
        else:
            _stopped(job, run, status, now, stats)
        run.settled_at = now
        stats["settled"] = stats.get("settled", 0) + 1
    run.save()


def _stamp(run: ExecutorRun, status: RunStatus | None, now) -> None:
    """The run's row as the executor sees it now."""
    if status is None:
        run.ended_at = run.ended_at or now
        run.reason = "The executor no longer knows this run."
        return
    run.state, run.native_state, run.reason = status.state, status.native_state[:32], status.reason[:300]
    run.exit_code = status.exit_code
    if status.state != PENDING:
        run.gpu_indexes = list(status.gpu_indexes) or run.gpu_indexes  # an ended run's are no longer listed
        run.started_at = run.started_at or _when(status.started_at, now)
    if status.state in ENDED:
        run.ended_at = run.ended_at or _when(status.ended_at, now)


def _when(epoch: float | None, now) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC) if epoch else now


def _repoint(job: Job, run: ExecutorRun, indexes: tuple[int, ...]) -> None:
    """The job's open allocations on the run's node moved to the GPUs the executor gave it
    (Slurm chooses the indexes): those it already holds stay, the others move in index order.
    Left as they are when the counts differ (the executor's answer is not about this placement)."""
    allocations = list(
        Allocation.objects.filter(job=job, end__isnull=True, gpu__node_id=run.node_id).select_related("gpu")
    )
    held, wanted = {a.gpu.index for a in allocations}, set(indexes)
    if not wanted or held == wanted or len(held) != len(wanted) or len(allocations) != len(wanted):
        return
    gpus = {gpu.index: gpu for gpu in Gpu.objects.filter(node_id=run.node_id, index__in=wanted - held)}
    if len(gpus) != len(wanted - held):
        return
    movers = sorted((a for a in allocations if a.gpu.index not in wanted), key=lambda a: a.gpu.index)
    for allocation, index in zip(movers, sorted(wanted - held), strict=True):
        Allocation.objects.filter(pk=allocation.pk).update(gpu=gpus[index])
    announce("job %s: Slurm gave it GPU(s) %s of %s", job.pk, ",".join(map(str, sorted(wanted))), run.node_id)


def _report(job: Job, run: ExecutorRun, status_word: str) -> tuple[Report | None, list[str]]:
    """The run's new output as a report in the agent path's words (None: no contract line),
    and its measurement lines; the offset moves past the lines read."""
    news = output_read(run.output_path, run.output_offset)
    run.output_offset = news.offset
    if not news.reports:
        return None, []
    checkpoint_step, checkpoint_path = news.checkpoint or (None, "")
    steps = news.step if news.step is not None else job.current_step
    return Report(status=status_word, steps=steps, total_steps=news.total, checkpoint_step=checkpoint_step,
                  checkpoint_path=checkpoint_path), news.measurements


def _progress(job: Job, run: ExecutorRun, status: RunStatus, now, stats: dict) -> Job:
    """The run started: its new lines stored through the agent path's rules (a running report
    they refuse stores nothing; its lines are passed over), the job running."""
    word = _REPORTED.get(status.state, "preempted") if status.state in ENDED else "running"
    report, measurements = _report(job, run, word)
    placed = job.state == JobState.PLACED.value
    started_by = f"Slurm (job {run.external_id})"
    if report is not None:
        rate = _rate_due(run, report.steps, now, final=word != "running")
        if rate is not None or run.rate_at is None or report.steps < run.rate_step:
            run.rate_step, run.rate_at = report.steps, now  # the next throughput counts from here
        # Where it runs, for the start's announcement, a measurement, a campaign's results.
        allocations = list(Allocation.objects.filter(job=job, end__isnull=True)
                           .select_related("gpu__node", "gpu__gpu_type").prefetch_related("partners")
                           ) if placed or rate is not None or job.campaign_id is not None else []
        try:
            job, _ = run_report(job, report, allocations, steps_per_s=rate, measurements=measurements,
                                started_by=started_by, now=now)
        except ValidationError as refused:
            stats["reports_refused"] = stats.get("reports_refused", 0) + 1
            announce("job %s: its run's output was refused: %s", job.pk, "; ".join(refused.messages))
        job_changed(job)  # its progress
    ran = status.state == RUNNING or status.started_at is not None
    if job.state == JobState.PLACED.value and ran:  # not a run cancelled or failed before it started
        job = job_transition(job=job, to=JobState.RUNNING.value, reason=f"Started by {started_by}.", now=now)
    if placed and job.state != JobState.PLACED.value:
        stats["started"] = stats.get("started", 0) + 1
    return job


def _rate_due(run: ExecutorRun, step: int | None, now, *, final: bool) -> float | None:
    """The run's steps per second since its rate mark (rate_step at rate_at), when a
    throughput is due (progress.py makes it a catalog measurement, at most one per
    GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S): once the mark is that old, or at the run's end
    over at least RATE_MIN_S. None otherwise, or when the run made no progress since."""
    if run.rate_at is None or step is None or step <= run.rate_step:
        return None
    seconds = (now - run.rate_at).total_seconds()
    wanted = RATE_MIN_S if final else max(RATE_MIN_S, settings.GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S)
    return (step - run.rate_step) / seconds if seconds >= wanted else None


def _ended(job: Job, run: ExecutorRun, status: RunStatus | None, now, stats: dict) -> None:
    """The job's current run ended (or is lost): the job's end, or back to pending."""
    state = status.state if status is not None else None
    stats["ended"] = stats.get("ended", 0) + 1
    if state == SUCCEEDED:
        job_ended(job, "succeeded", steps=job.current_step, exit_code=0,
                  message=f"Exited with status 0 (Slurm {status.native_state}).", now=now)
    elif state == FAILED and status.exit_code == RESUME_EXIT_CODE:
        job.refresh_from_db()
        stops.stopped(job, Report(status="preempted", steps=job.current_step), exit_code=RESUME_EXIT_CODE, now=now)
    elif state in (FAILED, TIMEOUT):
        why = ", ".join(word for word in (status.native_state, status.reason) if word)
        message = f"Exited with status {status.exit_code} (Slurm {why})" if state == FAILED else \
            f"Ran past its time limit in Slurm ({why})"
        job_ended(job, "failed", steps=job.current_step, exit_code=status.exit_code, message=message[:300], now=now)
    elif state == CANCELLED:
        job = job_transition(job=job, to=JobState.CANCELLED.value, now=now,
                             reason=f"Cancelled in Slurm, not by GOGH (Slurm job {run.external_id}).")
        scheduling_round_request(trigger=SolveTrigger.CANCEL)
        announce("job %s cancelled: %s", job.pk, job.state_reason)
    else:
        kind = InterruptionKind.PREEMPTED if state == PREEMPTED else InterruptionKind.NODE_DOWN
        why = {NODE_FAIL: "its node failed under it", PREEMPTED: "Slurm preempted it"}.get(
            state, "Slurm no longer knows its run")
        job.refresh_from_db()
        stops.back_to_pending(job, kind=kind, now=now, reason=f"{why[0].upper()}{why[1:]} (Slurm job "
                              f"{run.external_id}); it resumes from its checkpoint at step {job.checkpoint_step or 0}.")


def _stopped(job: Job, run: ExecutorRun, status: RunStatus | None, now, stats: dict) -> None:
    """A run GOGH was stopping (or whose job moved on meanwhile) ended: its last output is the
    handover of its checkpoint (stops.handover), or a late success (progress.late_end); the
    next run may then be submitted. A job that ended (cancelled) only has its run settled."""
    stats["stopped"] = stats.get("stopped", 0) + 1
    word = "succeeded" if status is not None and status.state == SUCCEEDED else "preempted"
    report, _ = _report(job, run, word)
    if run.started_at is None and report is None:
        return  # it never ran: nothing to hand over
    report = report or Report(status=word, steps=job.current_step)
    try:
        if word == "succeeded":
            late_end(job, report, message=f"Exited with status 0 (Slurm {status.native_state}).", now=now)
        else:
            stops.handover(job, report, next_run_waits=True, now=now)
    except NotAssigned:
        pass  # the job ended meanwhile (or its run was not its last): nothing of this run counts
