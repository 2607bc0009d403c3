"""The rules a job's report must follow before anything of it is stored, and what storing its
progress means. A run resumes at its job's last checkpoint, so it never reports a step below
it; checkpoints only move forward and lie within the job's steps. A refused running report is
a 400 with a reason per field, and nothing of it is stored (the caller checks before it
writes); a final report keeps its end or stop, without what the rules refuse of it."""
from dataclasses import dataclass, replace

from django.core.exceptions import ValidationError
from django.db import connection

from ..models import Job

RUNNING = "running"


class NotAssigned(Exception):
    """The job has no open allocation here any more (cancelled, preempted, moved): the agent
    should stop it. The API answers 409."""


@dataclass(frozen=True)
class Report:
    """What an agent says of a job's run: its status, where it is, and its latest checkpoint."""

    status: str
    steps: int
    total_steps: int | None = None
    checkpoint_step: int | None = None
    checkpoint_path: str = ""


def check_report(job: Job, report: Report) -> Report:
    """The report to store on the locked `job`: a running report the rules refuse raises
    ValidationError naming each refused field. A final one (succeeded, failed, preempted) is
    never refused for them: what they refuse of it (its checkpoint, its length) is left out and
    the rest recorded, since its end or stop is what matters (refused, a job that ended or
    exited to be resumed would stay running with no process; a stop reported by the node that
    last ran the job, after it was taken away, keeps an older checkpoint out the same way)."""
    errors = _problems(job, report)
    if not errors:
        return report
    if report.status == RUNNING:
        raise ValidationError(errors)
    if "checkpoint_step" in errors:
        report = replace(report, checkpoint_step=None, checkpoint_path="")
    if "total_steps" in errors:
        report = replace(report, total_steps=None)
    return report


def _problems(job: Job, report: Report) -> dict[str, list[str]]:
    """{field: [why it is refused]} of `report` on `job`. An end may lie below the checkpoint
    (the end is recorded); a running report may not."""
    errors: dict[str, list[str]] = {}
    total = job.total_steps or report.total_steps
    checkpoint = report.checkpoint_step
    if checkpoint is not None and total is not None and checkpoint > total:
        errors["checkpoint_step"] = [f"Checkpoint step {checkpoint} is beyond the job's {total} steps."]
    elif checkpoint is not None and job.checkpoint_step is not None and checkpoint < job.checkpoint_step:
        errors["checkpoint_step"] = [
            f"Checkpoint step {checkpoint} is older than the job's last checkpoint, at step {job.checkpoint_step}."
        ]
    if job.total_steps is None and report.total_steps is not None and report.total_steps < (job.checkpoint_step or 0):
        errors["total_steps"] = [
            f"{report.total_steps} steps end before the job's last checkpoint, at step {job.checkpoint_step}."
        ]
    if report.status == RUNNING and job.checkpoint_step is not None and report.steps < job.checkpoint_step:
        errors["steps"] = [
            f"Step {report.steps} is below the job's last checkpoint, at step {job.checkpoint_step}: "
            "a run resumes at its checkpoint."
        ]
    return errors


def newer_checkpoint(job: Job, report: Report) -> bool:
    """Whether `report` names a checkpoint beyond the job's last (or its first)."""
    return report.checkpoint_step is not None and (
        job.checkpoint_step is None or report.checkpoint_step > job.checkpoint_step
    )


def checkpoint_values(job: Job, report: Report, now) -> dict:
    """The job's checkpoint fields `report` changes: a newer checkpoint, or the same step
    written elsewhere by the job's current run."""
    if newer_checkpoint(job, report) or (
        report.checkpoint_step is not None and report.checkpoint_step == job.checkpoint_step
        and report.checkpoint_path != job.checkpoint_path
    ):
        return {"checkpoint_step": report.checkpoint_step, "checkpoint_path": report.checkpoint_path,
                "checkpoint_at": now}
    return {}


def record_progress(job: Job, report: Report, now) -> None:
    """Store a checked report on the locked `job`, in one update: the run is at `steps`
    (current_step), the job's best (steps_done) only ever rises, its length is filled in when
    the submitter left it empty, and a newer checkpoint is kept."""
    values = {"current_step": report.steps, **checkpoint_values(job, report, now)}
    if report.steps > job.steps_done:
        values["steps_done"] = report.steps
    if report.total_steps is not None and job.total_steps is None:
        values["total_steps"] = report.total_steps
    Job.objects.filter(pk=job.pk).update(**values)


def record_steps(steps: dict[int, int]) -> None:
    """Where many running jobs' runs are ({job id: step}, each checked by check_report: steps
    alone, no checkpoint or length), stored as record_progress stores it, in two statements
    for any number of jobs: a sync that reads a thousand runs' progress every few seconds
    cannot afford a locked transaction each. A job no longer running (a round moved it since
    it was read) is left alone: its interruption set where its next run starts."""
    if not steps:
        return
    table = connection.ops.quote_name(Job._meta.db_table)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET current_step = %s WHERE id = %s AND state = %s",
                           [(step, job_id, RUNNING) for job_id, step in steps.items()])
        cursor.executemany(f"UPDATE {table} SET steps_done = %s WHERE id = %s AND state = %s AND steps_done < %s",
                           [(step, job_id, RUNNING, step) for job_id, step in steps.items()])
