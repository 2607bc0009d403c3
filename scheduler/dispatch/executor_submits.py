"""Phase 6 of the executor sync: placed jobs on the executor's nodes that have no run yet are
submitted, as the round placed them: on its node, its GPUs' type and count, or a share of one
GPU when it is co-located, with the job contract's environment (where to resume, where to
checkpoint, its grace period) and its own, under its tenant's account where one is mapped.
A job whose last run is still stopping, or whose hand-over is awaited (Job.handover_until),
waits; one the executor refuses goes back to pending with the executor's words, and the others
go on."""
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef

from gogh_web.activity import announce
from telemetry.agent import contract
from telemetry.models import NodeManager

from ..executors.base import Executor, ExecutorError, Launch, NodeStatus
from ..lifecycle import JobState
from ..models import Allocation, ExecutorRun, Job
from ..services import job_transition


def submits_apply(executor: Executor, nodes: dict[str, NodeStatus], *, slurm: dict, now, stats: dict,
                  errors: list[ExecutorError]) -> None:
    """Submit every placed job waiting for its run (`nodes`: the snapshot's, for their shares
    per GPU; `slurm`: settings.GOGH_SLURM)."""
    waiting = (
        Job.objects.filter(state=JobState.PLACED.value, allocations__end__isnull=True,
                           allocations__gpu__node__managed_by=NodeManager.SLURM)
        .exclude(handover_until__gt=now)
        .exclude(Exists(ExecutorRun.objects.filter(job=OuterRef("pk"), settled_at__isnull=True)))
        .values_list("pk", flat=True).distinct()
    )
    for job_id in sorted(waiting):
        launch = _launch_locked(executor, job_id, nodes, slurm, now, stats, errors)
        if launch is not None:
            stats["submitted"] = stats.get("submitted", 0) + 1


@transaction.atomic
def _launch_locked(executor: Executor, job_id: int, nodes: dict[str, NodeStatus], slurm: dict, now, stats: dict,
                   errors: list[ExecutorError]) -> Launch | None:
    """Submit one job, locked and checked again (a round or another sync may have got there
    first); the Launch submitted, or None."""
    job = Job.objects.select_for_update().select_related("tenant").filter(pk=job_id).first()
    if job is None or job.state != JobState.PLACED.value or \
            ExecutorRun.objects.filter(job=job, settled_at__isnull=True).exists():
        return None
    allocations = open_allocations(job)
    try:
        launch = launch_for(job, allocations, nodes, slurm)
        external_id = executor.submit(launch)
    except ExecutorError as error:
        errors.append(error)
        reason = f"Slurm refused the job: {error.command}: {error.message}"[:300]
        job_transition(job=job, to=JobState.PENDING.value, reason=reason, now=now)
        stats["refused"] = stats.get("refused", 0) + 1
        announce("job %s back to pending: %s", job.pk, reason)
        return None
    try:
        with transaction.atomic():
            run_record(job, launch, allocations, executor=executor.name, external_id=external_id, now=now)
    except IntegrityError:  # another sync submitted it first: this copy goes
        try:
            executor.signal(external_id, kill=True)
        except ExecutorError as error:
            errors.append(error)  # the copy runs as a foreign run until someone cancels it
        return None
    announce("job %s submitted to Slurm as job %s on %s", job.pk, external_id, launch.node)
    return launch


def open_allocations(job: Job) -> list[Allocation]:
    """The job's open allocations with what a Launch reads of them (GPU, node, partners)."""
    return list(
        Allocation.objects.filter(job=job, end__isnull=True).select_related("gpu__node", "gpu__gpu_type")
        .annotate(partner_count=Count("partners")).order_by("gpu__index")
    )


def run_record(job: Job, launch: Launch, allocations: list[Allocation], *, executor: str, external_id: str,
               now) -> ExecutorRun:
    """The record of a submitted run (IntegrityError when the job has an unsettled one)."""
    return ExecutorRun.objects.create(
        job=job, executor=executor, external_id=external_id, node=allocations[0].gpu.node,
        gpu_type=launch.gpu_type, num_gpus=launch.num_gpus, shares=launch.shares,
        output_path=launch.output_path, submitted_at=now,
    )


def launch_for(job: Job, allocations: list[Allocation], nodes: dict[str, NodeStatus], slurm: dict) -> Launch:
    """The job's next run as placed; ExecutorError (command "submit") for a placement the
    executor cannot express: GPUs on several nodes, or a shared GPU on a node without shares."""
    run_number = job.executor_runs.count() + 1
    hosts = sorted({allocation.gpu.node.hostname for allocation in allocations})
    if len(hosts) != 1:
        raise ExecutorError("submit", f"a run is on one node; this placement spans {', '.join(hosts) or 'none'}")
    node = hosts[0]
    gpu_type = allocations[0].gpu.gpu_type.name
    gres = {name: gres for gres, name in slurm["gres_types"].items()}.get(gpu_type, gpu_type)
    group = max(allocation.partner_count for allocation in allocations) + 1
    shares = None
    if group > 1:
        per_gpu = nodes[node].shards_per_gpu if node in nodes else 0
        if per_gpu < group or len(allocations) != 1:
            raise ExecutorError("submit", f"{node} cannot share one GPU between {group} runs "
                                          f"({per_gpu} shards per GPU, {len(allocations)} GPU(s))")
        shares = per_gpu // group
    checkpoints = Path(slurm["checkpoint_dir"]) / f"job-{job.pk}"
    checkpoints.mkdir(parents=True, exist_ok=True)
    output_dir = Path(slurm["output_dir"])
    output_dir.mkdir(parents=True, exist_ok=True)
    resume_checkpoint = job.checkpoint_path if job.checkpoint_step is not None else ""
    environment = {
        **{str(key): str(value) for key, value in job.environment.items()},
        "GOGH_JOB_ID": str(job.pk),
        contract.RESUME_STEP: str(job.checkpoint_step or 0),
        contract.RESUME_CHECKPOINT: resume_checkpoint,
        contract.CHECKPOINT_DIR: str(checkpoints.absolute()),
        contract.PREEMPT_GRACE_S: str(job.preemption_grace_s),
    }
    return Launch(
        job_id=job.pk, node=node, gpu_type=gres, num_gpus=len(allocations), command=job.command,
        environment=environment, grace_s=job.preemption_grace_s, shares=shares,
        account=slurm["accounts"].get(job.tenant.slug, ""),
        output_path=str((output_dir / f"job-{job.pk}-run-{run_number}.out").absolute()),
    )
