"""What a node's agent must run: the only read of jobs an agent makes."""
from django.db.models import Prefetch
from django.utils import timezone

from telemetry.models import Node

from ..lifecycle import JobState
from ..models import Allocation, Job
from .executor_settings import executor_pushes


def node_assignments(node: Node, *, for_its_agent: bool) -> list[dict]:
    """Each placed or running job with open allocations on the node's GPUs, with the GPU
    indexes, its command and environment.
    `placed_at` changes whenever the job is placed anew (migrated, preempted and placed again,
    on this node or another), never when only its partners change: agents restart on it.
    `partners`: the workloads of the jobs sharing its GPUs, sorted ([] alone).
    `power_limits_w`: the power limit the round chose for each GPU of `gpu_indexes`, in the same
    order (null: the board's default); the agent applies it without restarting the job (agents
    from before ignore it). `power_limit_speed`: the fraction of its default-limit throughput the
    round planned the job at under those limits (null: at the default); real GPUs slow the job
    themselves, a simulated node slows it by this.
    `resume_step` / `resume_checkpoint`: where a new run of the job starts (its last
    checkpoint; 0 and "" without one); `preemption_grace_s`: how long it may take to stop.
    A job moved or preempted while it ran is not listed until its last run has stopped
    (Job.handover_until): its new run then resumes from the checkpoint that run made last.

    An unapproved node has none: tenants' jobs, and the secrets in their environments, go only
    to admitted nodes. The environment's values are the node's agent's alone
    (`for_its_agent`); anyone else (staff) sees its names with null values, as in the jobs API.
    With a pushing executor (GOGH_EXECUTOR=slurm) the executor runs every job and agents only
    observe: none."""
    if executor_pushes():
        return []
    allocations = (
        Allocation.objects.filter(
            end__isnull=True, gpu__node=node, gpu__node__approved_at__isnull=False,
            job__state__in=[JobState.PLACED.value, JobState.RUNNING.value],
        )
        .exclude(job__handover_until__gt=timezone.now())
        .select_related("job__workload", "gpu__gpu_type")
        .prefetch_related(Prefetch("partners", queryset=Job.objects.select_related("workload")))
        .order_by("job_id", "gpu__index")
    )
    by_job: dict[int, dict] = {}
    for allocation in allocations:
        job = allocation.job
        entry = by_job.setdefault(
            job.pk,
            {
                "job": job.pk, "state": job.state, "allocations": [], "gpu_indexes": [],
                "gpu_type": allocation.gpu.gpu_type.name, "workload": job.workload.name,
                "partners": sorted(partner.workload.name for partner in allocation.partners.all()),
                "command": job.command, "total_steps": job.total_steps,
                "environment": job.environment if for_its_agent else dict.fromkeys(job.environment),
                "steps_done": job.steps_done, "resume_step": job.checkpoint_step or 0,
                "resume_checkpoint": job.checkpoint_path if job.checkpoint_step is not None else "",
                "preemption_grace_s": job.preemption_grace_s,
                "placed_at": job.placed_at.isoformat() if job.placed_at else None, "power_limits_w": [],
                "power_limit_speed": allocation.power_limit_speed,
            },
        )
        entry["allocations"].append(allocation.pk)
        entry["gpu_indexes"].append(allocation.gpu.index)
        entry["power_limits_w"].append(allocation.power_limit_w)
    return list(by_job.values())
