"""Phase 2 of the executor sync, before the inventory: runs named for a GOGH job (its
`<prefix>-<job id>`) that GOGH has no record of. They are its own submissions whose record was
lost: the worker died between sbatch and the commit of the run's row. Left alone, such a run
would hold its GPUs as someone else's while the sync submitted the job again, and the job would
run twice. A waiting or running one whose job is placed on its node and has no run yet is
adopted (recorded as the lost submit would have recorded it: the same Launch is rebuilt from
the same placement); any other is killed, since its job has moved on without it.

The job prefix must be this installation's own (docs/executors.md): two GOGH installations
sharing a Slurm cluster under one prefix would take each other's runs for lost ones."""
from django.db import transaction

from gogh_web.activity import announce

from ..executors.base import PENDING, RUNNING, Executor, ExecutorError, NodeStatus, RunStatus
from ..lifecycle import JobState
from ..models import ExecutorRun, Job
from .executor_submits import launch_for, open_allocations, run_record


def orphans_apply(executor: Executor, runs: list[RunStatus], nodes: dict[str, NodeStatus], *, slurm: dict, now,
                  stats: dict, errors: list[ExecutorError]) -> None:
    """Adopt or kill the live runs of `runs` named for a job that have no ExecutorRun."""
    named = {run.external_id: run for run in runs if run.job_id is not None and run.state in (PENDING, RUNNING)}
    if not named:
        return
    recorded = set(ExecutorRun.objects.filter(executor=executor.name, external_id__in=list(named))
                   .values_list("external_id", flat=True))
    for external_id, run in sorted(named.items()):
        if external_id in recorded:
            continue
        fate = _adopted(executor, run, nodes, slurm, now)
        if fate == RECORDED:
            continue
        if fate == ADOPTED:
            stats["adopted"] = stats.get("adopted", 0) + 1
            continue
        try:
            executor.signal(external_id, kill=True)
            stats["orphans_killed"] = stats.get("orphans_killed", 0) + 1
            announce("Slurm job %s (named for job %s) has no record and no place: killed", external_id, run.job_id)
        except ExecutorError as error:
            errors.append(error)


RECORDED, ADOPTED, ORPHAN = "recorded", "adopted", "orphan"


@transaction.atomic
def _adopted(executor: Executor, run: RunStatus, nodes: dict[str, NodeStatus], slurm: dict, now) -> str:
    """ADOPTED: `run` recorded as its job's run (the job is placed on the run's node, where it
    runs if it does, and has no unsettled run); RECORDED: another sync's submit recorded it
    meanwhile (its job's lock, taken here, waited for that submit to commit); else ORPHAN."""
    job = Job.objects.select_for_update().select_related("tenant").filter(pk=run.job_id).first()
    if ExecutorRun.objects.filter(executor=executor.name, external_id=run.external_id).exists():
        return RECORDED
    if job is None or job.state != JobState.PLACED.value or \
            ExecutorRun.objects.filter(job=job, settled_at__isnull=True).exists():
        return ORPHAN
    allocations = open_allocations(job)
    hosts = {allocation.gpu.node.hostname for allocation in allocations}
    if len(hosts) != 1 or (run.node and hosts != {run.node}):
        return ORPHAN
    try:
        launch = launch_for(job, allocations, nodes, slurm)
    except ExecutorError:
        return ORPHAN
    run_record(job, launch, allocations, executor=executor.name, external_id=run.external_id, now=now)
    announce("job %s: Slurm job %s adopted as its run (its submit's record was lost)", job.pk, run.external_id)
    return ADOPTED
