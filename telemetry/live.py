"""Telemetry's live kinds, `node` and `gpu` (docs/live-updates.md): the dicts that both the
snapshot and the events carry, the snapshot's parts, and what services call when nodes or GPUs
change. Both kinds are cluster-wide: every signed-in user sees them.
"""
from functools import partial

from django.db.models import OuterRef, Subquery

from gogh_web.events.sending import send_event, send_events_merged
from gogh_web.events.state import iso, number

from .models import Gpu, GpuSample, GpuState, Node

# --- State (pure: callers fetch the instances and their related rows)


def node_state(node, *, gpu_count: int) -> dict:
    """A node and how many GPUs it reports. The heartbeat time is left out on purpose: it changes
    every few seconds and would cost an event each time; the state says what matters."""
    return {
        "id": node.pk,
        "hostname": node.hostname,
        "state": node.state,
        "state_reason": node.state_reason,
        "managed_by": node.managed_by,
        "cell": node.cell,
        "labels": node.labels,
        "agent_version": node.agent_version,
        "gpu_count": gpu_count,
        "registered_at": iso(node.registered_at),
    }


def gpu_state(gpu, *, sample) -> dict:
    """A GPU (node and type loaded) with its newest raw sample (or None), its learnt speed and
    flag, its health notes, at-risk reason and throttled speed and the power limit in force (docs/gpu_health.md)."""
    return {
        "id": gpu.pk,
        "node_id": gpu.node_id,
        "node": gpu.node.hostname,
        "index": gpu.index,
        "uuid": gpu.uuid,
        "gpu_type": gpu.gpu_type.name,
        "state": gpu.state,
        "state_reason": gpu.state_reason,
        "external_holder": gpu.external_holder,
        "power_limit_w": number(gpu.power_limit_w),
        "power_limit_error": gpu.power_limit_error,
        "power_w": number(sample.power_w) if sample else None,
        "utilization": number(sample.utilization) if sample else None,
        "temperature_c": number(sample.temperature_c) if sample else None,
        "memory_used_mb": number(sample.memory_used_mb) if sample else None,
        "sampled_at": iso(sample.ts) if sample else None,
        "speed_factor": number(gpu.speed_factor),
        "speed_observations": gpu.speed_observations,
        "speed_flag": gpu.speed_flag,
        "health_notes": list(gpu.health.get("notes", [])),
        "at_risk": gpu.health.get("at_risk", ""),
        "throttled_speed": gpu.health.get("throttled_speed"),
    }


# --- Current data (what the snapshot and the events carry; None: gone)


def nodes_data(nodes) -> dict[str, dict]:
    """A node's GPU count leaves out its MISSING GPUs."""
    counts: dict[int, int] = {}
    for node_id in Gpu.objects.filter(node__in=nodes).exclude(state=GpuState.MISSING).values_list("node_id", flat=True):
        counts[node_id] = counts.get(node_id, 0) + 1
    return {str(node.pk): node_state(node, gpu_count=counts.get(node.pk, 0)) for node in nodes}


def node_data(node_id: int) -> dict | None:
    return nodes_data(Node.objects.filter(pk=node_id)).get(str(node_id))


def gpus_data(gpus) -> dict[str, dict]:
    newest = GpuSample.objects.filter(gpu=OuterRef("pk")).order_by("-ts").values("pk")[:1]
    gpus = list(gpus.select_related("node", "gpu_type").annotate(newest_sample=Subquery(newest)))
    samples = GpuSample.objects.in_bulk([gpu.newest_sample for gpu in gpus if gpu.newest_sample])
    return {str(gpu.pk): gpu_state(gpu, sample=samples.get(gpu.newest_sample)) for gpu in gpus}


def gpus_data_by_key(keys: list[str]) -> dict[str, dict]:
    return gpus_data(Gpu.objects.filter(pk__in=[int(key) for key in keys]))


def nodes_snapshot(viewer) -> dict[str, dict]:
    return nodes_data(Node.objects.all())


def gpus_snapshot(viewer) -> dict[str, dict]:
    return gpus_data(Gpu.objects.all())


# --- Events (what services call, inside their transaction)


def node_changed(node_id: int) -> None:
    send_event(kind="node", key=node_id, data=partial(node_data, node_id))


def gpus_changed(gpu_ids) -> None:
    """GPUs whose state or newest sample changed: an event of each GPU after the call (per sample
    batch), all built and stored together and merged with the GPU events of the process's
    concurrent uploads (sending.send_events_merged): one locked transaction per turn, not one
    per upload, and one event per GPU per turn however many uploads named it."""
    send_events_merged(kind="gpu", keys=gpu_ids, data=gpus_data_by_key)
