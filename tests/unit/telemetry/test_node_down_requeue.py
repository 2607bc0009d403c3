"""A node that goes down (silence, an operator, its agent leaving) sends its jobs back to
pending, closing their allocations, exactly once."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.dispatch import requeue
from scheduler.models import Allocation, Job, SolverConfig
from scheduler.problem_source import _kept_in_place, problem_from_database
from scheduler.services import job_transition
from telemetry.models import Gpu, Node
from telemetry.services import (
    node_heartbeat,
    node_leaving,
    node_register,
    node_set_state,
    nodes_mark_silent_down,
)

from .jobs import placed_job
from .reports import node_report


@pytest.fixture
def jobs(node1, alice, resnet50, make_user, gpu_types, agent):
    """On node1: a placed job, a running one, a finished one; a job spread over node1 and
    node2; and a job only on node2."""
    node2, _ = node_register(agent_user=agent, **node_report("node2"))
    one = list(Gpu.objects.filter(node=node1).order_by("index"))
    two = list(Gpu.objects.filter(node=node2).order_by("index"))
    placed = placed_job(alice, resnet50, one[:1])
    running = job_transition(job=placed_job(alice, resnet50, one[1:2]), to="running")
    done = job_transition(job=job_transition(job=placed_job(alice, resnet50, one[2:3]), to="running"), to="succeeded")
    spread = placed_job(alice, resnet50, [one[3], two[0]])
    elsewhere = placed_job(alice, resnet50, two[1:2])
    return {"placed": placed, "running": running, "done": done, "spread": spread, "elsewhere": elsewhere}


def states(jobs):
    return {name: Job.objects.get(pk=job.pk).state for name, job in jobs.items()}


def test_a_silent_node_sends_its_jobs_back_to_pending_exactly_once(jobs, node1, agent):
    node_heartbeat(node=Node.objects.get(hostname="node2"), agent_user=agent)
    Node.objects.filter(pk=node1.pk).update(last_heartbeat=timezone.now() - timedelta(seconds=120))
    assert nodes_mark_silent_down(timeout_s=60) == 1
    assert states(jobs) == {
        "placed": "pending", "running": "pending", "done": "succeeded", "spread": "pending", "elsewhere": "placed",
    }
    job = Job.objects.get(pk=jobs["running"].pk)
    assert job.pending_reason == "Node node1 went down: no heartbeat for 60 s"
    assert not Allocation.objects.filter(job__in=[jobs["placed"], jobs["running"], jobs["spread"]],
                                         end__isnull=True).exists()  # node2's half of `spread` too
    assert Allocation.objects.filter(job=jobs["elsewhere"], end__isnull=True).count() == 1
    updated = {pk: Job.objects.get(pk=pk).updated_at for pk in (jobs["placed"].pk, jobs["running"].pk)}

    assert nodes_mark_silent_down(timeout_s=60) == 0  # already down: nothing happens twice
    node_set_state(node=Node.objects.get(pk=node1.pk), state="down", reason="again")
    assert {pk: Job.objects.get(pk=pk).updated_at for pk in updated} == updated


def test_an_operator_marking_a_node_down_requeues_its_jobs(jobs, node1):
    node_set_state(node=node1, state="down", reason="maintenance")
    assert Job.objects.get(pk=jobs["running"].pk).pending_reason == "Node node1 went down: maintenance"


def test_an_agent_that_leaves_takes_its_node_down_and_its_jobs_back_to_pending(jobs, node1, agent, client_for,
                                                                              make_user):
    intruder = make_user("agent-x", agent=True)
    assert client_for(intruder).post(f"/api/nodes/{node1.pk}/leave/", {}, format="json").status_code == 403
    response = client_for(agent).post(f"/api/nodes/{node1.pk}/leave/", {}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "down"
    assert response.json()["state_reason"] == "agent left (agent-node1)"
    assert states(jobs)["running"] == "pending"
    node = node_heartbeat(node=Node.objects.get(pk=node1.pk), agent_user=agent)
    assert node.state == "ready"  # back on its next report


def test_a_job_a_round_moved_off_the_node_meanwhile_is_left_alone(jobs, node1, monkeypatch):
    """The jobs are found first and locked after; one a round has just migrated elsewhere in
    between lost nothing and keeps its new placement."""
    moved = jobs["placed"]
    elsewhere = Gpu.objects.filter(node__hostname="node2").order_by("index").last()
    lock = Job.objects.select_for_update

    def migrated_in_between(*args, **kwargs):
        Allocation.objects.filter(job=moved, end__isnull=True).update(end=timezone.now())
        Allocation.objects.create(job=moved, gpu=elsewhere, start=timezone.now())
        return lock(*args, **kwargs)

    monkeypatch.setattr(Job.objects, "select_for_update", migrated_in_between)
    node_set_state(node=node1, state="down", reason="maintenance")
    assert states(jobs) == {
        "placed": "placed", "running": "pending", "done": "succeeded", "spread": "pending", "elsewhere": "placed",
    }


def test_a_node_goes_down_only_with_its_jobs_requeued_in_the_same_transaction(jobs, node1, monkeypatch):
    """telemetry tells the scheduler through a signal; the requeue runs inside telemetry's
    transaction, so when it fails the node does not go down either (no down node that the
    scheduler believes runs work), and the next attempt requeues them."""
    def broken(*args, **kwargs):
        raise RuntimeError("requeue failed")

    monkeypatch.setattr(requeue, "job_transition", broken)
    with pytest.raises(RuntimeError):
        node_set_state(node=node1, state="down", reason="maintenance")
    assert Node.objects.get(pk=node1.pk).state == "ready"
    assert states(jobs)["running"] == "running"
    monkeypatch.undo()
    node_set_state(node=node1, state="down", reason="maintenance")
    assert Node.objects.get(pk=node1.pk).state == "down" and states(jobs)["running"] == "pending"


def test_an_agent_announcing_its_leave_drains_its_node_until_the_leave(jobs, node1, agent, client_for, make_user,
                                                                      monkeypatch):
    """Leaving: the node takes no new work (its GPUs are out of the rounds' problem) while its
    running jobs stay put until they report their stop; not an operator's drain: the leave
    takes it down, and its agent's next report makes it ready."""
    intruder = make_user("agent-x", agent=True)
    assert client_for(intruder).post(f"/api/nodes/{node1.pk}/leaving/", {}, format="json").status_code == 403
    assert Node.objects.get(pk=node1.pk).state == "ready"
    assert client_for(agent).post(f"/api/nodes/{node1.pk}/leaving/", {"x": 1}, format="json").status_code == 400
    response = client_for(agent).post(f"/api/nodes/{node1.pk}/leaving/", {}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "draining"
    node = Node.objects.get(pk=node1.pk)
    assert node.state == "draining" and not node.drained and "leaving" in node.state_reason
    assert states(jobs)["running"] == "running"  # kept where it is until it reports its stop
    kept_jobs, kept_gpus = _kept_in_place()
    assert jobs["running"].pk in kept_jobs
    assert not set(Gpu.objects.filter(node=node1).values_list("pk", flat=True)) & {
        int(gpu.id) for gpu in problem_from_database(SolverConfig.load()).gpus}
    response = client_for(agent).post(f"/api/nodes/{node1.pk}/leave/", {}, format="json")
    assert response.json()["state"] == "down" and states(jobs)["running"] == "pending"
    assert node_heartbeat(node=Node.objects.get(pk=node1.pk), agent_user=agent).state == "ready"


def test_an_agent_restarted_before_its_leave_brings_its_node_back_ready(node1, agent):
    node_leaving(node=node1, agent_user=agent)
    assert node_heartbeat(node=Node.objects.get(pk=node1.pk), agent_user=agent).state == "ready"


def test_leaving_leaves_an_operators_drain_and_a_down_node_as_they_are(node1, agent):
    node_set_state(node=node1, state="draining", reason="maintenance")
    node = node_leaving(node=Node.objects.get(pk=node1.pk), agent_user=agent)
    assert (node.state, node.state_reason, node.drained) == ("draining", "maintenance", True)
    assert node_heartbeat(node=node, agent_user=agent).state == "draining"  # the operator's drain stays
    node_set_state(node=Node.objects.get(pk=node1.pk), state="down", reason="gone")
    assert node_leaving(node=Node.objects.get(pk=node1.pk), agent_user=agent).state == "down"
