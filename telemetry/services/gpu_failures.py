"""A node's agent reports GPUs that died (NVML: GPU is lost; the simulation: told to fail).

The GPU is marked failed, which only an operator undoes (telemetry.lifecycle), so nothing is
placed on it again until someone has looked; the jobs on it go back to pending and the next
round places them elsewhere. A second report of the same GPU changes nothing, so the requeue
happens exactly once.
"""
from django.core.exceptions import ValidationError
from django.db import transaction

from .. import live, signals
from ..models import Gpu, GpuState, Node
from .access import check_may_report

REASON_LENGTH = 200


@transaction.atomic
def gpus_report_failed(*, node: Node, agent_user, failures: list[dict]) -> list[Gpu]:
    """Mark the reported GPUs of `node` failed and requeue their jobs; the GPUs as they are now.
    `failures`: [{"uuid", "reason"}]. A uuid that is not one of the node's GPUs is refused
    (ValidationError naming it) and nothing is changed."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    check_may_report(node, agent_user)
    by_uuid = {gpu.uuid: gpu for gpu in Gpu.objects.select_for_update().filter(node=node)}
    unknown = [item["uuid"] for item in failures if item["uuid"] not in by_uuid]
    if unknown:
        raise ValidationError({"gpus": [f"Not a GPU of node {node.hostname}: {', '.join(unknown)}."]})
    newly = []
    for item in failures:
        gpu = by_uuid[item["uuid"]]
        if gpu.state == GpuState.FAILED:
            continue
        reason = item.get("reason") or "reported failed by its agent"
        gpu.state, gpu.state_reason = GpuState.FAILED, f"agent: {reason}"[:REASON_LENGTH]
        gpu.save(update_fields=["state", "state_reason"])
        newly.append(gpu)
    if newly:
        live.gpus_changed(gpu.pk for gpu in newly)
        names = ", ".join(f"{node.hostname} GPU {gpu.index}" for gpu in newly)
        signals.gpus_lost.send(sender=Gpu, gpu_ids=[gpu.pk for gpu in newly], reason=f"{names} failed")
    return sorted(by_uuid.values(), key=lambda gpu: gpu.index)
