"""Heartbeats, operators' moves and the silence detector (service and Celery task)."""
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.test import override_settings
from django.utils import timezone

from telemetry import tasks
from telemetry.lifecycle import IllegalTransition
from telemetry.models import Gpu, GpuState, Node, NodeState
from telemetry.services import gpu_set_state, node_heartbeat, node_register, node_set_state, nodes_mark_silent_down

from .reports import node_report


def test_heartbeat_records_the_time(node1, agent):
    Node.objects.filter(pk=node1.pk).update(last_heartbeat=timezone.now() - timedelta(hours=1))
    node = node_heartbeat(node=node1, agent_user=agent)
    assert timezone.now() - node.last_heartbeat < timedelta(seconds=5)


def test_heartbeat_revives_down_but_not_draining(node1, agent):
    node_set_state(node=node1, state=NodeState.DOWN, reason="no heartbeat for 60 s")
    node = node_heartbeat(node=node1, agent_user=agent)
    assert (node.state, node.state_reason) == (NodeState.READY, "")
    node_set_state(node=node1, state=NodeState.DRAINING, reason="maintenance")
    node = node_heartbeat(node=node1, agent_user=agent)
    assert (node.state, node.state_reason) == (NodeState.DRAINING, "maintenance")


def test_heartbeat_of_a_released_node_needs_staff(node1, agent, staff):
    Node.objects.filter(pk=node1.pk).update(agent=None)
    with pytest.raises(PermissionDenied):
        node_heartbeat(node=node1, agent_user=agent)
    assert node_heartbeat(node=node1, agent_user=staff).state == NodeState.READY


def test_heartbeat_needs_the_permission_still(node1, agent):
    agent.user_permissions.clear()
    agent = type(agent).objects.get(pk=agent.pk)  # fresh permission cache
    with pytest.raises(PermissionDenied):
        node_heartbeat(node=node1, agent_user=agent)


def test_silent_nodes_go_down_with_injected_now(gpu_types, agent):
    for name in ("fresh", "stale", "drained", "gone"):
        node_register(agent_user=agent, **node_report(name, gpus=[]))
    now = timezone.now() + timedelta(minutes=10)
    Node.objects.filter(hostname="fresh").update(last_heartbeat=now - timedelta(seconds=30))
    Node.objects.filter(hostname="drained").update(state=NodeState.DRAINING)
    Node.objects.filter(hostname="gone").update(state=NodeState.DOWN, state_reason="earlier")

    assert nodes_mark_silent_down(timeout_s=60, now=now) == 2
    states = dict(Node.objects.values_list("hostname", "state"))
    assert states == {"fresh": "ready", "stale": "down", "drained": "down", "gone": "down"}
    assert Node.objects.get(hostname="stale").state_reason == "no heartbeat for 60 s"
    assert Node.objects.get(hostname="gone").state_reason == "earlier"
    assert nodes_mark_silent_down(timeout_s=60, now=now) == 0


def test_a_node_that_never_heartbeated_counts_as_silent(node1):
    Node.objects.filter(pk=node1.pk).update(last_heartbeat=None)
    assert nodes_mark_silent_down(timeout_s=60) == 1


@override_settings(GOGH_NODE_HEARTBEAT_TIMEOUT_S=5)
def test_celery_task_uses_the_configured_timeout(node1):
    assert tasks.nodes_mark_silent_down.name == "telemetry.tasks.nodes_mark_silent_down"
    assert tasks.nodes_mark_silent_down.apply().get() == 0
    Node.objects.filter(pk=node1.pk).update(last_heartbeat=timezone.now() - timedelta(seconds=6))
    assert tasks.nodes_mark_silent_down.apply().get() == 1
    node1.refresh_from_db()
    assert node1.state_reason == "no heartbeat for 5 s"


def test_operator_moves(node1):
    assert node_set_state(node=node1, state=NodeState.DRAINING, reason="psu").state == NodeState.DRAINING
    assert node_set_state(node=node1, state=NodeState.READY).state_reason == ""
    down = node_set_state(node=node1, state=NodeState.DOWN, reason="pulled")
    assert (down.state, down.state_reason) == (NodeState.DOWN, "pulled")
    with pytest.raises(IllegalTransition):
        node_set_state(node=node1, state=NodeState.READY)


def test_gpu_operator_moves(node1, agent):
    gpu = Gpu.objects.get(index=0)
    assert gpu_set_state(gpu=gpu, state=GpuState.DISABLED, reason="x").state == GpuState.DISABLED
    assert gpu_set_state(gpu=gpu, state=GpuState.HEALTHY).state == GpuState.HEALTHY
    Gpu.objects.filter(pk=gpu.pk).update(state=GpuState.MISSING)
    with pytest.raises(IllegalTransition):
        gpu_set_state(gpu=gpu, state=GpuState.HEALTHY)
