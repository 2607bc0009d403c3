"""Phase 5 of the executor sync: runs whose job no longer holds GPUs on their node (a round
moved or preempted it, its node went down or drained, it was cancelled) are stopped as the
job contract says: the preemption notice (SIGTERM: the job checkpoints and exits asking to be
resumed), then, still running after the job's grace period, the kill. A run that has not
started yet has nothing to save and is killed at once. The run settles when the executor
reports its end (executor_runs.py); only then is the job's next run submitted."""
from datetime import timedelta

from django.db import transaction

from gogh_web.activity import announce

from ..executors.base import PENDING, Executor, ExecutorError, RunStatus
from ..models import ExecutorRun
from .executor_runs import not_current


def stops_apply(executor: Executor, statuses: dict[str, RunStatus], *, waited: set[str], now, stats: dict,
                errors: list[ExecutorError]) -> None:
    """Notice or kill every unsettled run the snapshot was taken for (`waited`) that is no
    longer its job's current one. A signal the executor refuses is recorded in `errors` and
    tried again at the next sync (the run's row is left as it was)."""
    for run in not_current(executor.name).select_related("job"):
        if run.external_id not in waited:
            continue  # submitted by another sync since the snapshot: the next sync judges it
        status = statuses.get(run.external_id)
        started = status is not None and status.state != PENDING
        if run.stop_requested_at is not None and (run.kill_at > now or not started):
            continue  # within its grace period, or killed before it started and not yet gone
        kill = run.stop_requested_at is not None or not started
        try:
            executor.signal(run.external_id, kill=kill)
        except ExecutorError as error:
            errors.append(error)
            continue
        stats["killed" if kill else "noticed"] = stats.get("killed" if kill else "noticed", 0) + 1
        if run.stop_requested_at is None:
            _requested(run, kill=kill, now=now)


@transaction.atomic
def _requested(run: ExecutorRun, *, kill: bool, now) -> None:
    grace = timedelta(seconds=0 if kill else run.job.preemption_grace_s)
    ExecutorRun.objects.filter(pk=run.pk, stop_requested_at__isnull=True).update(
        stop_requested_at=now, kill_at=now + grace, stop_reason=run.job.state_reason[:300]
    )
    announce("job %s: its Slurm job %s %s (%s)", run.job_id, run.external_id,
             "cancelled" if kill else f"told to stop within {run.job.preemption_grace_s} s", run.job.state_reason)
