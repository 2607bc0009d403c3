"""The executor sync (GOGH_EXECUTOR=slurm): the rounds' decisions pushed through a pushing
executor, and its truth read back. Run by Celery beat every GOGH_SLURM["sync_s"], and asked
for through the outbox right after a round commits a decision that opened or closed
allocations, and when a job is cancelled (services.executor_sync_request).

 1. one snapshot of the executor, outside any transaction; a command that fails is recorded
    (ExecutorSync ok=False, with the command and its message) and nothing else is written;
 2. runs named for a GOGH job that it has no record of (a submit whose record was lost):
    adopted where their job is placed, else killed (executor_orphans.py);
 2-3. its inventory and the runs GOGH did not submit -> telemetry (executor_inventory.py);
 4. each unsettled run against its status (executor_runs.py);
 4b. a placed job whose run Slurm keeps waiting past GOGH_SLURM_PENDING_TIMEOUT_S goes back to
    pending with Slurm's reason (executor_stuck.py);
 5. runs whose job left their node are stopped, notice then kill (executor_stops.py);
 6. placed jobs without a run are submitted (executor_submits.py).
Every phase compares the database with the snapshot and writes only the difference, so a
second sync changes nothing more and a sync that failed half-way is repaired by the next.
Each sync is recorded (ExecutorSync: counts, errors, CPU seconds); the newest KEEP_SYNCS stay.
"""
import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from .. import live
from ..executors.base import Executor, ExecutorError
from ..models import ExecutorRun, ExecutorSync
from .executor_inventory import inventory_apply
from .executor_orphans import orphans_apply
from .executor_runs import runs_apply
from .executor_settings import executor_from_settings
from .executor_stops import stops_apply
from .executor_stuck import stuck_apply
from .executor_submits import submits_apply

KEEP_SYNCS = 1000


def executor_sync(*, executor: Executor | None = None, now=None) -> ExecutorSync | None:
    """One sync with the configured executor (or `executor`); its record, or None for an
    executor that pushes nothing (GOGH's agents pull their assignments)."""
    executor = executor or executor_from_settings()
    if not executor.pushes:
        return None
    started, cpu = now or timezone.now(), time.process_time()
    unsettled = ExecutorRun.objects.filter(executor=executor.name, settled_at__isnull=True)
    # Only these runs are judged by this snapshot: one another sync submits meanwhile is not
    # in it, and must not be taken for a run Slurm lost.
    waited = set(unsettled.values_list("external_id", flat=True))
    try:
        snapshot = executor.snapshot(waiting_on=sorted(waited))
    except ExecutorError as error:
        return _record(executor, started, cpu, stats={}, errors=[error])
    now = now or timezone.now()
    statuses = {run.external_id: run for run in snapshot.runs}
    stats: dict = {"runs": len(snapshot.runs)}
    errors: list[ExecutorError] = []
    slurm = settings.GOGH_SLURM
    nodes = {node.name: node for node in snapshot.nodes}
    orphans_apply(executor, snapshot.runs, nodes, slurm=slurm, now=now, stats=stats, errors=errors)
    try:
        inventory_apply(snapshot, manager=executor.name, gres_types=slurm["gres_types"],
                        known=set(unsettled.values_list("external_id", flat=True)), now=now, stats=stats)
    except ValidationError as refused:  # all or nothing: the inventory is tried again next sync
        errors.append(ExecutorError("inventory", "; ".join(refused.messages)))
    with live.jobs_batched():
        runs_apply(statuses, executor=executor.name, waited=waited, now=now, stats=stats)
        stuck_apply(statuses, executor=executor.name, waited=waited, timeout_s=slurm["pending_timeout_s"], now=now,
                    stats=stats)
        stops_apply(executor, statuses, waited=waited, now=now, stats=stats, errors=errors)
        submits_apply(executor, nodes, slurm=slurm, now=now, stats=stats, errors=errors)
    return _record(executor, started, cpu, stats=stats, errors=errors)


def _record(executor: Executor, started, cpu: float, *, stats: dict, errors: list[ExecutorError]) -> ExecutorSync:
    """The sync's row (the first failed command and every error's words), older rows pruned."""
    left_out = stats.get("left_out", [])
    sync = ExecutorSync.objects.create(
        executor=executor.name, started_at=started, finished_at=timezone.now(), ok=not errors,
        command=errors[0].command[:500] if errors else "",
        error="\n".join([str(error) for error in errors] + left_out), stats=stats,
        cpu_s=time.process_time() - cpu,
    )
    first_gone = ExecutorSync.objects.order_by("-id").values_list("id", flat=True)[KEEP_SYNCS:KEEP_SYNCS + 1]
    if first_gone:
        ExecutorSync.objects.filter(id__lte=first_gone[0]).delete()
    return sync
