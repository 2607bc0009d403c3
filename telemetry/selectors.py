"""Reads of the inventory, shaped for the callers that need them (API lists, registration)."""
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
        .prefetch_related(Prefetch("gpus", queryset=Gpu.objects.select_related("gpu_type", "power_curve")))
        .order_by("hostname")  # Meta.ordering does not apply to a query with an aggregate
    )


def gpus() -> QuerySet[Gpu]:
    return Gpu.objects.select_related("node", "gpu_type", "power_curve")


def gpu_types_by_name() -> dict[str, GpuType]:
    """Every GPU type (a short table), to resolve the types of a registration in one query."""
    return {gpu_type.name: gpu_type for gpu_type in GpuType.objects.all()}

