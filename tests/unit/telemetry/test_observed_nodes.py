"""Nodes Slurm manages, as their observer agents and the silence detector see them: the agent's
registration adopts the placeholder GPUs by index (their UUIDs become the real ones, their
history stays one row) and changes neither managed_by, approval nor state; heartbeats and a
leave leave the state to Slurm; samples flow; the silence detector leaves such nodes alone."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.models import Allocation
from telemetry.models import Gpu, GpuSample, Node, NodeState
from telemetry.services import (
    gpu_samples_ingest,
    node_heartbeat,
    node_leave,
    node_register,
    nodes_mark_silent_down,
)
from telemetry.services.executor_inventory import executor_inventory_apply

from .jobs import placed_job
from .reports import gpu_report, node_report

TIMEOUT = 60


def slurm(up=True, count=4, gpu_type="v100"):
    executor_inventory_apply(manager="slurm", holders={}, nodes=[
        {"name": "n-v100", "up": up, "reason": "" if up else "fan broken", "gpus": {gpu_type: count}}])
    return Node.objects.get(hostname="n-v100")


def observer_report(count=4, gpu_type="v100"):
    return node_report("n-v100", gpus=[gpu_report(i, hostname="n-v100", gpu_type=gpu_type, pci_bus_id=f"0000:0{i}:00.0")
                                       for i in range(count)])


@pytest.fixture
def observed(gpu_types, agent):
    """n-v100 from Slurm's inventory, then registered by its observer agent."""
    slurm()
    node, created = node_register(agent_user=agent, **observer_report())
    assert not created
    return node


def test_the_observer_adopts_the_placeholder_gpus_by_index(gpu_types, agent, alice, resnet50):
    node = slurm()
    placeholders = list(Gpu.objects.filter(node=node).order_by("index"))
    job = placed_job(alice, resnet50, placeholders[:1])

    node_register(agent_user=agent, **observer_report())
    rows = list(Gpu.objects.filter(node=node).order_by("index").values_list("pk", "uuid", "state", "pci_bus_id"))
    assert rows == [(gpu.pk, f"GPU-n-v100-{i}", "healthy", f"0000:0{i}:00.0") for i, gpu in enumerate(placeholders)]
    assert Gpu.objects.count() == 4
    assert Allocation.objects.get(job=job).gpu_id == placeholders[0].pk  # the same row: its history stays

    slurm()  # the next sync keeps the real UUIDs
    assert list(Gpu.objects.filter(node=node).order_by("index").values_list("uuid", flat=True)) == [
        f"GPU-n-v100-{i}" for i in range(4)]


def test_the_observer_changes_neither_manager_nor_approval_nor_state(gpu_types, agent):
    node = slurm(up=False)
    approved_at = node.approved_at
    again, _ = node_register(agent_user=agent, **observer_report())
    assert (again.managed_by, again.approved_at, again.approved_by) == ("slurm", approved_at, None)
    assert (again.state, again.state_reason) == (NodeState.DOWN, "Slurm: fan broken")
    assert again.agent == agent  # it reports for the node from now on

    assert node_heartbeat(node=again, agent_user=agent).state == NodeState.DOWN
    slurm(up=True)
    node_leave(node=again, agent_user=agent)
    assert Node.objects.get(pk=node.pk).state == NodeState.READY  # an observer leaving is not the node leaving


def test_the_slurm_type_of_a_gpu_wins_over_the_observers(gpu_types, agent):
    slurm(gpu_type="v100")
    node_register(agent_user=agent, **observer_report(gpu_type="p100"))
    assert set(Gpu.objects.values_list("gpu_type__name", flat=True)) == {"v100"}


def test_the_observers_samples_flow_to_the_adopted_gpus(observed, agent):
    now = timezone.now()
    stored = gpu_samples_ingest(agent_user=agent, samples=[
        {"gpu": f"GPU-n-v100-{i}", "ts": now, "power_w": 50.0 + i} for i in range(4)])
    assert stored == 4
    assert GpuSample.objects.filter(gpu__node=observed).count() == 4


def test_the_silence_detector_leaves_slurm_nodes_alone(observed, agent):
    node_register(agent_user=agent, **node_report("node-a"))
    Node.objects.update(last_heartbeat=timezone.now() - timedelta(seconds=10 * TIMEOUT))
    Node.objects.filter(hostname="node-a").update(last_heartbeat=timezone.now())
    later = timezone.now() + timedelta(seconds=2 * TIMEOUT)
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=later, check_every_s=TIMEOUT / 4) == 1  # node-a only
    assert dict(Node.objects.values_list("hostname", "state")) == {"n-v100": "ready", "node-a": "down"}
