"""Interrupting a job: the one place that records it (a JobInterruption) and charges what it
costs to the job (restarts, steps lost, where its next run resumes), whoever stops it: a round
that moves or preempts it (services._apply), a node that went down or a GPU that failed
(dispatch.requeue), the job itself exiting to be resumed (dispatch.stops).

A job that had started loses the steps since its last checkpoint (all of them without one);
its next run resumes at that checkpoint. Rows are built from the job's locked row as it was
before it stopped (interruption_row), and stored with the job's counters in a few statements
for any number of jobs (interruptions_record), so a round's apply stays batched."""
from collections import defaultdict
from datetime import timedelta

from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest

from .lifecycle import JobState
from .models import Job, JobInterruption

#: A moved or preempted running job's next run waits for the last one to stop: at most its
#: grace period (SIGTERM to SIGKILL) and this margin for its agent to notice and report.
HANDOVER_MARGIN = timedelta(seconds=15)
_RESUME_STEP = Coalesce(F("checkpoint_step"), Value(0))


def interruption_row(job: Job, *, kind: str, reason: str, now, solve_run=None) -> JobInterruption:
    """The record (unsaved) of stopping `job` now, from its locked row as it is before it
    stops: where its run was, where the next one resumes (its checkpoint, else 0), the steps
    in between that are lost."""
    resume = job.checkpoint_step or 0
    return JobInterruption(
        job=job, kind=kind, reason=reason[:300], at=now, solve_run=solve_run,
        was_running=job.state == JobState.RUNNING.value, steps_done=job.current_step, resume_step=resume,
        steps_lost=max(0, job.current_step - resume),
    )


def interruptions_record(rows: list[JobInterruption], *, now, handover: bool) -> None:
    """Store `rows` and charge the restarts to the jobs that were running, in one insert and
    one update (plus one per distinct grace period with `handover`): restarts + 1, steps lost
    added, resume and current step set to the checkpoint. Computed by the database from the
    same columns interruption_row read, so jobs with different counts share one statement.

    `handover` (a round moved or preempted them): their next run is held back until the
    running one has stopped (Job.handover_until: its grace period and HANDOVER_MARGIN from now;
    cleared earlier when its agent reports the stop, dispatch.stops.handover)."""
    if not rows:
        return
    JobInterruption.objects.bulk_create(rows)
    restarted = [row.job for row in rows if row.was_running]
    if not restarted:
        return
    Job.objects.filter(pk__in=[job.pk for job in restarted]).update(
        restarts=F("restarts") + 1,
        steps_lost=F("steps_lost") + Greatest(F("current_step") - _RESUME_STEP, Value(0)),
        resume_step=_RESUME_STEP,
        current_step=_RESUME_STEP,
    )
    if handover:
        by_grace = defaultdict(list)
        for job in restarted:
            by_grace[job.preemption_grace_s].append(job.pk)
        for grace_s, job_ids in sorted(by_grace.items()):
            Job.objects.filter(pk__in=job_ids).update(handover_until=now + timedelta(seconds=grace_s) + HANDOVER_MARGIN)


#: Jobs a preemption's reason names at most (the others are counted).
NAMED_JOBS = 3


def preemption_cause(job: Job, held: tuple[int, ...], reason: str, newcomers: list[tuple[Job, set[int]]]) -> str:
    """Why a round preempted `job` (holding GPUs `held`), for people: the higher-priority jobs
    it admitted instead (pending jobs it places: those given `job`'s GPUs, else all of them),
    highest first; else the solver's `reason`. `newcomers`: (job, GPU ids it is placed on)."""
    higher = [(other, gpus) for other, gpus in newcomers if other.priority > job.priority]
    on_its_gpus = [other for other, gpus in higher if gpus & set(held)]
    named = sorted(on_its_gpus or [other for other, _ in higher], key=lambda other: (-other.priority, other.pk))
    if not named:
        return reason
    jobs = ", ".join(f"{other.pk} (priority {other.priority})" for other in named[:NAMED_JOBS])
    more = f" and {len(named) - NAMED_JOBS} more" if len(named) > NAMED_JOBS else ""
    return f"room for higher-priority job{'s' if len(named) > 1 else ''} {jobs}{more}."


def move_reason(solve_run_id: int, where: str, *, before_w: float | None, after_w: float | None) -> str:
    """Why a round moved a job, for people: where to, and the power predicted there against
    what it was predicted to draw where it was, when both are known."""
    reason = f"Moved by solve {solve_run_id} to {where}"
    if before_w is not None and after_w is not None:
        reason += f": predicted {after_w:.0f} W instead of {before_w:.0f} W"
    return reason + "."
