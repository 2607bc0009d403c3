"""Phase 4b of the executor sync: a run the executor keeps waiting too long.

GOGH places a job on GPUs it believes free; Slurm may still keep the run PENDING, for a reason
GOGH cannot see in its inventory (a reservation, a partition or account limit, a node feature,
BadConstraints). Left alone, the job would sit "placed" for good on GPUs nobody uses. After
GOGH_SLURM_PENDING_TIMEOUT_S the job goes back to pending with Slurm's reason, its allocations
closed; the stop phase then cancels the run (it never started, so nothing is lost), and the next
round places the job again with the GPUs it held counted free. No interruption is recorded: the
job never ran there.
"""
from datetime import timedelta

from django.db import transaction

from gogh_web.activity import announce

from ..executors.base import PENDING, RunStatus
from ..lifecycle import JobState
from ..models import ExecutorRun, Job, SolveTrigger
from ..services import job_transition, scheduling_round_request
from .executor_runs import is_current, open_nodes


def stuck_apply(statuses: dict[str, RunStatus], *, executor: str, waited: set[str], timeout_s: float, now,
                stats: dict) -> None:
    """Send back to pending the job of every current run the snapshot shows still waiting
    `timeout_s` after its submission."""
    cutoff = now - timedelta(seconds=timeout_s)
    runs = [run for run in ExecutorRun.objects.filter(
        executor=executor, settled_at__isnull=True, stop_requested_at__isnull=True, submitted_at__lte=cutoff,
    ).select_related("job", "node") if run.external_id in waited]
    waiting = [run for run in runs if (status := statuses.get(run.external_id)) is not None and status.state == PENDING]
    if not waiting:
        return
    nodes = open_nodes([run.job_id for run in waiting])
    for run in waiting:
        if _requeue_locked(run.pk, statuses[run.external_id], nodes.get(run.job_id, set()), now):
            stats["stuck"] = stats.get("stuck", 0) + 1
    if stats.get("stuck"):
        scheduling_round_request(trigger=SolveTrigger.NODE)


@transaction.atomic
def _requeue_locked(run_id: int, status: RunStatus, nodes: set[int], now) -> bool:
    run = ExecutorRun.objects.select_related("node").get(pk=run_id)
    job = Job.objects.select_for_update().get(pk=run.job_id)
    if run.settled_at is not None or run.stop_requested_at is not None or not is_current(run, job, nodes):
        return False  # another sync or a round dealt with it since the snapshot
    waited_s = int((now - run.submitted_at).total_seconds())
    why = status.reason or status.native_state or "no reason given"
    reason = (f"Slurm kept its run {run.external_id} waiting {waited_s} s on "
              f"{run.node.hostname if run.node else 'its node'} ({why}); placed again")[:300]
    job_transition(job=job, to=JobState.PENDING.value, reason=reason, now=now)
    announce("job %s back to pending: %s", job.pk, reason)
    return True
