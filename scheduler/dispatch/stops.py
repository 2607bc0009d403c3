"""A job's run that stopped to be resumed (a "preempted" report): the job keeps the work it
checkpointed.

- handover: a round moved or preempted the job while it ran, and the node that ran it reports
  its stop (it got SIGTERM, checkpointed within its grace period, exited). Its checkpoint is
  recorded if newer, the interruption's and the job's resume step and steps lost follow it,
  and the next run, held back meanwhile (Job.handover_until, set to now: the hold is over,
  and a stop reported again is still known as this run's, not the next run's), may start now.
- stopped: the job still holds its allocation here and exited by itself asking to be resumed
  (exit status 75): it goes back to pending and resumes from its checkpoint, recorded as an
  interruption of kind stopped."""
from gogh_web.activity import announce
from telemetry.services.access import may_report

from ..interruptions import interruption_row, interruptions_record
from ..lifecycle import JobState
from ..live import job_changed
from ..models import Allocation, InterruptionKind, Job, JobInterruption, SolveTrigger
from ..services import job_transition, scheduling_round_request
from .report_rules import NotAssigned, Report, check_report, checkpoint_values, newer_checkpoint

_WAITING = (JobState.PENDING.value, JobState.PLACED.value)

#: How an agent's report of a run it stopped begins (telemetry.agent.agent); the rest says why.
AGENT_STOP = "Stopped by the agent: "


def last_stopped_run(job: Job) -> JobInterruption | None:
    """The interruption that stopped the job's last run (not a move of a job placed but not
    started since, which stopped nothing)."""
    return JobInterruption.objects.filter(job=job, was_running=True).order_by("-at", "-id").first()


def ran_last_on(job: Job, agent_user) -> bool:
    """Whether the job's last run was on a node of `agent_user`: the allocations that its
    interruption closed (at the same instant) were there. A job placed again meanwhile (and
    moved before it started) still knows where it last ran. Without an interruption, the node
    of its most recently closed allocation."""
    stop = last_stopped_run(job)
    closed = Allocation.objects.filter(job=job, end__isnull=False).select_related("gpu__node")
    if stop is not None:
        closed = closed.filter(end=stop.at)
    last = closed.order_by("-end", "-start", "-pk").first()
    return last is not None and may_report(last.gpu.node, agent_user)


def handover(job: Job, report: Report, *, next_run_waits: bool, now) -> Job:
    """The stop of the job's last run, reported by the node that held it after the job was
    taken away: stored unless the job's next run has started (NotAssigned, nothing stored).
    The same stop reported again changes nothing more.

    Its checkpoint becomes the job's only while no next run can have started from the one
    before: the job waits unplaced, or its next run is held back (Job.handover_until), or it
    is placed on this node again (whose agent starts it only once this stop is settled). A
    next run elsewhere, no longer held, may have started from the older one: the job keeps
    that, and the interruption counts the steps beyond it as lost. `next_run_waits`: no next
    run can have started from the older checkpoint: the job holds an allocation on the
    reporting node (whose agent starts it only once this stop is settled), or a pushing
    executor's sync reports the stop (it submits the next run only once this one settled)."""
    if job.state not in _WAITING:
        raise NotAssigned(f"Job {job.pk} runs again elsewhere; its stop here changes nothing.")
    report = check_report(job, report)
    held = job.handover_until is not None and job.handover_until > now
    values = {}
    if held:
        values["handover_until"] = now  # the hold is over; None once the next run starts
    if report.steps > job.steps_done:
        values["steps_done"] = report.steps
    resume = job.checkpoint_step or 0
    if newer_checkpoint(job, report) and (held or next_run_waits or job.state == JobState.PENDING.value):
        values.update(checkpoint_values(job, report, now))
        resume = report.checkpoint_step
    last = last_stopped_run(job)
    if last is not None:
        stopped_at = max(last.steps_done, report.steps)
        lost = max(0, stopped_at - resume)
        values.update(resume_step=resume, current_step=resume, steps_lost=job.steps_lost - last.steps_lost + lost)
        last.steps_done, last.resume_step, last.steps_lost = stopped_at, resume, lost
        last.save(update_fields=["steps_done", "resume_step", "steps_lost"])
    if values:
        Job.objects.filter(pk=job.pk).update(**values)
    job.refresh_from_db()
    job_changed(job)
    announce("job %s stopped at step %s on the node that ran it; it resumes at step %s", job.pk,
             report.steps, resume)
    return job


def stopped(job: Job, report: Report, *, exit_code: int | None, message: str = "", now) -> Job:
    """The job's run (progress already recorded) exited asking to be resumed, by itself or
    stopped by its agent (the node leaves, its GPU failed, out of touch: the report's `message`
    says which, and goes into the reason): back to pending, its work kept up to its checkpoint,
    and a round asked for (its GPUs are free, and it waits to run again)."""
    job.refresh_from_db()
    status = f"exit status {exit_code}" if exit_code is not None else "no exit status"
    if job.checkpoint_step is not None:
        then = f"it resumes from its checkpoint at step {job.checkpoint_step}."
    else:
        then = "it made no checkpoint, so it starts again from step 0."
    if message.startswith(AGENT_STOP):  # the agent's own words: telemetry.agent.agent, _reap_stopped
        reason = f"Its run was stopped at step {job.current_step} by its node's agent: " \
                 f"{message.removeprefix(AGENT_STOP).rstrip('.')}; {then}"
    else:
        reason = f"Its run stopped at step {job.current_step} asking to be resumed ({status}); {then}"
    return back_to_pending(job, kind=InterruptionKind.STOPPED, reason=reason, now=now)


def back_to_pending(job: Job, *, kind: str, reason: str, now) -> Job:
    """The job's run ended under it and it waits to run again (its exit asked for it, or its
    executor lost the run, its node failed, the executor preempted it): an interruption of
    `kind`, back to pending, its work kept up to its checkpoint, and a round asked for."""
    stop = interruption_row(job, kind=kind, reason=reason, now=now)
    job = job_transition(job=job, to=JobState.PENDING.value, reason=reason[:300], now=now)
    interruptions_record([stop], now=now, handover=False)
    scheduling_round_request(trigger=SolveTrigger.FINISH)
    announce("job %s back to pending: %s", job.pk, job.pending_reason)
    job.refresh_from_db()
    job_changed(job)
    return job
