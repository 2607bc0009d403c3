"""Reads of the inventory, shaped for the callers that need them (API lists, registration,
agents' assignments)."""
from django.db.models import Count, Prefetch, QuerySet

from catalog.models import GpuType

from .models import Gpu, Node


def nodes() -> QuerySet[Node]:
    """Bare nodes, for actions that fetch one row and change it."""
    return Node.objects.all()


def nodes_with_gpus() -> QuerySet[Node]:
    """Nodes with their agent, approver, GPU count and GPUs (types joined): what lists and
    details show."""
    return (
        Node.objects.select_related("agent", "approved_by")
        .annotate(gpu_count=Count("gpus", distinct=True))
        .prefetch_related(Prefetch("gpus", queryset=Gpu.objects.select_related("gpu_type")))
        .order_by("hostname")  # Meta.ordering does not apply to a query with an aggregate
    )


def gpus() -> QuerySet[Gpu]:
    return Gpu.objects.select_related("node", "gpu_type")


def gpu_types_by_name() -> dict[str, GpuType]:
    """Every GPU type (a short table), to resolve the types of a registration in one query."""
    return {gpu_type.name: gpu_type for gpu_type in GpuType.objects.all()}


def node_assignments(node: Node, *, for_its_agent: bool) -> list[dict]:
    """What the node's agent must run: each placed or running job with open allocations on the
    node's GPUs, with the GPU indexes, its command and environment (the agent's only read of jobs).
    `placed_at` changes whenever the job is placed anew (migrated, preempted and placed again,
    on this node or another), never when only its partners change: agents restart on it.
    `partners`: the workloads of the jobs sharing its GPUs, sorted ([] alone).

    An unapproved node has none: tenants' jobs, and the secrets in their environments, go only
    to admitted nodes. The environment's values are the node's agent's alone
    (`for_its_agent`); anyone else (staff) sees its names with null values, as in the jobs API."""
    from scheduler.lifecycle import JobState
    from scheduler.models import Allocation, Job

    allocations = (
        Allocation.objects.filter(
            end__isnull=True, gpu__node=node, gpu__node__approved_at__isnull=False,
            job__state__in=[JobState.PLACED.value, JobState.RUNNING.value],
        )
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
                "steps_done": job.steps_done, "placed_at": job.placed_at.isoformat() if job.placed_at else None,
            },
        )
        entry["allocations"].append(allocation.pk)
        entry["gpu_indexes"].append(allocation.gpu.index)
    return list(by_job.values())
