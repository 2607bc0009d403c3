"""Jobs on nodes that went down (or lost their approval), or on GPUs that failed, go back to
pending, through the scheduler's job_transition. telemetry says what was lost (its signals,
see receivers.py), in its own transaction, which the requeue joins.

A job on a down node makes no progress (or nobody can tell), so it is placed again in the next
round. Exactly once: the job's open allocations are closed by the same transition, so a second
call finds nothing to requeue; and only placed or running jobs hold open allocations that
matter (a job that ended had them closed when it ended). Each is recorded as an interruption
(scheduler.interruptions: kind node_down or gpu_failed): a running job loses the steps since
its last checkpoint and resumes there.
"""
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gogh_web.activity import announce

from ..interruptions import interruption_row, interruptions_record
from ..lifecycle import JobState
from ..models import Allocation, InterruptionKind, Job, SolveTrigger
from ..services import job_transition, scheduling_round_request

_ON_A_GPU = [JobState.PLACED.value, JobState.RUNNING.value]


@transaction.atomic
def jobs_requeue_from_nodes(*, node_ids: list[int], reason: str) -> int:
    """Move every placed or running job with an open allocation on `node_ids` back to pending
    (closing all its allocations, on other nodes too: a job is placed whole); how many moved."""

    def why(job):
        hosts = job.allocations.filter(end__isnull=True, gpu__node_id__in=node_ids).values_list(
            "gpu__node__hostname", flat=True
        )
        return f"Node {', '.join(sorted(set(hosts)))} went down: {reason}"

    return _requeue(Q(gpu__node_id__in=node_ids), why, InterruptionKind.NODE_DOWN)


@transaction.atomic
def jobs_requeue_from_gpus(*, gpu_ids: list[int], reason: str) -> int:
    """The same for jobs with an open allocation on one of `gpu_ids` (GPUs that failed)."""
    return _requeue(Q(gpu_id__in=gpu_ids), lambda job: f"GPU failure: {reason}", InterruptionKind.GPU_FAILED)


def _requeue(on: Q, why, kind: str) -> int:
    """`on`: which open allocations are lost (a filter of Allocation); `kind`: the interruption."""
    # Find the jobs first, then lock each: PostgreSQL refuses FOR UPDATE with DISTINCT.
    lost = Allocation.objects.filter(on, end__isnull=True, job__state__in=_ON_A_GPU)
    job_ids = set(lost.values_list("job_id", flat=True))
    moved, now = 0, timezone.now()
    for job in Job.objects.select_for_update().filter(pk__in=job_ids, state__in=_ON_A_GPU).order_by("pk"):
        if not Allocation.objects.filter(on, job=job, end__isnull=True).exists():
            continue  # moved off the lost node or GPU by a round since it was found: nothing lost
        reason = why(job)[:300]
        stop = interruption_row(job, kind=kind, reason=reason, now=now)
        job = job_transition(job=job, to=JobState.PENDING.value, reason=reason, now=now)
        interruptions_record([stop], now=now, handover=False)
        announce("job %s back to pending: %s", job.pk, job.pending_reason)
        moved += 1
    if moved:
        scheduling_round_request(trigger=SolveTrigger.NODE)
    return moved
