"""Which catalog measurements an agent account may write: only of what runs on its nodes
(settings.GOGH_AGENT_MEASUREMENT_RULE, called by catalog.services.measurements_create). What
runs where is the scheduler's to say; who an agent is, telemetry's (telemetry.services.access).
"""
from django.core.exceptions import PermissionDenied

from catalog.models import MeasurementSource
from telemetry.services.access import check_is_agent

from ..lifecycle import JobState
from ..models import Allocation


def check_may_measure(*, user, measurements: list[dict]) -> None:
    """An agent account writes catalog measurements only of what runs on its nodes: each one
    of source telemetry, naming a workload W and GPU type T such that a placed or running job
    of W has an open allocation on a T GPU of an approved node of this account, and a partner
    (if any) that is the workload of a job sharing that allocation's GPU. Staff write anything.

    Without it any agent token rewrote the catalog the optimiser plans with: 3 POSTs moved
    A3C's throughput on K80 from 3.44 to 600,000 steps/s. `measurements`: validated fields
    with model instances (catalog.services.measurements_create); PermissionDenied names each
    refused one by its index, and nothing is stored."""
    if user.is_staff:
        return
    check_is_agent(user)
    running = _running_on_nodes_of(user)
    refusals = []
    for index, item in enumerate(measurements):
        workload, gpu_type, partner = item["workload"], item["gpu_type"], item.get("partner")
        partners = running.get((workload.pk, gpu_type.pk))
        if item.get("source") != MeasurementSource.TELEMETRY:
            refusals.append(f"measurement {index}: an agent reports source telemetry only")
        elif partners is None:
            refusals.append(
                f"measurement {index}: no job of {workload.name!r} runs on a {gpu_type.name} GPU of this "
                "account's nodes"
            )
        elif partner is not None and partner.pk not in partners:
            refusals.append(
                f"measurement {index}: no job of {partner.name!r} shares a {gpu_type.name} GPU with a job of "
                f"{workload.name!r} on this account's nodes"
            )
    if refusals:
        raise PermissionDenied("; ".join(refusals) + ".")


def _running_on_nodes_of(user) -> dict[tuple[int, int], set[int]]:
    """{(workload id, GPU type id): workload ids of the jobs sharing those GPUs} of the jobs
    open on the approved nodes of agent account `user`, in two queries."""
    open_here = Allocation.objects.filter(
        end__isnull=True, gpu__node__agent=user, gpu__node__approved_at__isnull=False,
        job__state__in=[JobState.PLACED.value, JobState.RUNNING.value],
    )
    rows = list(open_here.values_list("pk", "job__workload_id", "gpu__gpu_type_id"))
    sharing: dict[int, set[int]] = {}
    for allocation_id, workload_id in Allocation.partners.through.objects.filter(
        allocation_id__in=[pk for pk, _, _ in rows]
    ).values_list("allocation_id", "job__workload_id"):
        sharing.setdefault(allocation_id, set()).add(workload_id)
    running: dict[tuple[int, int], set[int]] = {}
    for pk, workload_id, gpu_type_id in rows:
        running.setdefault((workload_id, gpu_type_id), set()).update(sharing.get(pk, ()))
    return running
