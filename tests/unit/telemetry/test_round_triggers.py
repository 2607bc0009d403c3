"""Inventory and progress events that change what can be placed ask for a scheduling round:
a node (re)registering, a node undrained, a node going down with jobs on it, a job ending."""
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from scheduler import services as scheduler_services
from scheduler.dispatch.progress import job_progress_report
from telemetry.models import Gpu, NodeState
from telemetry.services import node_register, node_set_state, nodes_mark_silent_down

from .jobs import placed_job
from .reports import node_report


@pytest.fixture
def rounds(monkeypatch):
    """The triggers asked for by committed transactions, in order (the outbox is replaced by a recorder)."""
    asked = []
    monkeypatch.setattr(scheduler_services, "_send_round",
                        lambda trigger: transaction.on_commit(lambda: asked.append(trigger)))
    return asked


def test_registration_asks_for_a_round(gpu_types, agent, rounds, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        node_register(agent_user=agent, **node_report())
    assert rounds == ["node"]


def test_a_node_going_down_with_jobs_asks_for_a_round(node1, alice, resnet50, rounds,
                                                      django_capture_on_commit_callbacks):
    placed_job(alice, resnet50, list(Gpu.objects.filter(node=node1))[:1])
    node1.last_heartbeat = timezone.now() - timedelta(hours=1)
    node1.save()
    with django_capture_on_commit_callbacks(execute=True):
        assert nodes_mark_silent_down(timeout_s=60) == 1
    assert rounds == ["node"]


@pytest.mark.parametrize("status,trigger", [("running", []), ("succeeded", ["finish"]), ("failed", ["finish"])])
def test_only_a_job_that_ends_asks_for_a_round(node1, agent, alice, resnet50, rounds, status, trigger,
                                               django_capture_on_commit_callbacks):
    job = placed_job(alice, resnet50, list(Gpu.objects.filter(node=node1))[:1])
    with django_capture_on_commit_callbacks(execute=True):
        job_progress_report(agent_user=agent, job_id=job.pk, status=status, steps=10, exit_code=1)
    assert rounds == trigger


def test_undraining_asks_for_a_round_and_draining_does_not(node1, rounds, django_capture_on_commit_callbacks):
    """Undrained, a node's GPUs take work again: waiting jobs should not wait for beat's next round."""
    with django_capture_on_commit_callbacks(execute=True):
        node_set_state(node=node1, state=NodeState.DRAINING)
    assert rounds == []
    with django_capture_on_commit_callbacks(execute=True):
        node_set_state(node=node1, state=NodeState.READY)
        node_set_state(node=node1, state=NodeState.READY, reason="again: no change")
    assert rounds == ["node"]
