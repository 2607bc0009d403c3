"""A drained node stays drained across down and back and keeps its running jobs until they end;
the silence detector does not mark every node down when the control plane was away, and still
finds one node that really died; heartbeat and registration answers tell agents when to fence."""
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from catalog.models import Measurement
from scheduler.models import Allocation, Job
from scheduler.services import job_submit, job_transition, scheduling_round_run
from telemetry.models import Gpu, Node, NodeState, SilenceWatch
from telemetry.services import node_heartbeat, node_register, node_set_state, nodes_mark_silent_down

from .jobs import placed_job
from .reports import node_report

TIMEOUT = 60
START = timezone.now() + timedelta(days=1)  # one fixed clock for the detector's runs


def at(seconds):
    return START + timedelta(seconds=seconds)


def heard(node, when):
    Node.objects.filter(pk=node.pk).update(last_heartbeat=when)


def states():
    return dict(Node.objects.values_list("hostname", "state"))


# --- drain

def test_a_drained_node_that_flaps_comes_back_draining(node1, agent):
    node = node_set_state(node=node1, state=NodeState.DRAINING, reason="maintenance")
    assert node.drained
    heard(node1, timezone.now() - timedelta(seconds=120))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT) == 1
    assert Node.objects.get(pk=node1.pk).state == NodeState.DOWN
    assert node_heartbeat(node=node1, agent_user=agent).state == NodeState.DRAINING
    node_set_state(node=node1, state=NodeState.DOWN, reason="pulled")
    again, _ = node_register(agent_user=agent, **node_report())  # an agent restart: still drained
    assert (again.state, again.drained) == (NodeState.DRAINING, True)


def test_undrain_clears_the_drain_so_the_node_comes_back_ready(node1, agent):
    node_set_state(node=node1, state=NodeState.DRAINING)
    node = node_set_state(node=node1, state=NodeState.READY)
    assert not node.drained
    node_set_state(node=node1, state=NodeState.DOWN, reason="pulled")
    assert node_heartbeat(node=node1, agent_user=agent).state == NodeState.READY


def test_drain_by_api_survives_a_flap(client_for, staff, node1, agent):
    assert client_for(staff).post(f"/api/nodes/{node1.pk}/drain/", {}, format="json").status_code == 200
    node_set_state(node=Node.objects.get(pk=node1.pk), state=NodeState.DOWN, reason="flap")
    body = client_for(agent).post(f"/api/nodes/{node1.pk}/heartbeat/").json()
    assert body["state"] == "draining"


@pytest.fixture
def two_nodes(v100, resnet50, agent):
    """`draining` and `ready`, two approved V100s each; ResNet-50 measured at 10 steps/s."""
    nodes = {}
    for name in ("draining", "ready"):
        node, _ = node_register(agent_user=agent, **node_report(name, gpus=[
            {"index": i, "uuid": f"GPU-{name}-{i}", "gpu_type": "v100"} for i in range(2)]))
        Node.objects.filter(pk=node.pk).update(approved_at=timezone.now())
        nodes[name] = list(Gpu.objects.filter(node=node).order_by("index"))
    for k, consolidated, throughput in ((1, True, 10.0), (2, True, 20.0), (2, False, 18.0)):
        Measurement.objects.create(workload=resnet50, gpu_type=v100, num_gpus=k, consolidated=consolidated,
                                   throughput=throughput, source="reference", observed_at=timezone.now())
    return nodes


def test_a_draining_node_keeps_its_running_jobs_and_takes_no_new_one(two_nodes, alice, resnet50):
    draining, ready = two_nodes["draining"], two_nodes["ready"]
    alone = job_transition(job=placed_job(alice, resnet50, draining[:1], min_throughput=8), to="running")
    spread = job_transition(job=placed_job(alice, resnet50, [draining[1], ready[0]], min_throughput=8),
                            to="running")  # half on the draining node: its ready GPU stays its own
    node_set_state(node=draining[0].node, state=NodeState.DRAINING, reason="maintenance")
    before = {job.pk: list(Allocation.objects.filter(job=job).values_list("pk", "end")) for job in (alone, spread)}
    new = job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1).job

    scheduling_round_run(trigger="periodic")
    scheduling_round_run(trigger="periodic")

    for job in (alone, spread):
        assert Job.objects.get(pk=job.pk).state == "running"
        assert list(Allocation.objects.filter(job=job).values_list("pk", "end")) == before[job.pk]
    new = Job.objects.get(pk=new.pk)
    assert new.state == "placed"
    assert [a.gpu for a in new.allocations.filter(end__isnull=True)] == [ready[1]]


# --- silence

@pytest.fixture
def alive_and_dead(gpu_types, agent):
    """Two nodes last heard at 0 s."""
    for name in ("alive", "dead"):
        node_register(agent_user=agent, **node_report(name, gpus=[]))
    Node.objects.update(last_heartbeat=at(0))
    return Node.objects.get(hostname="alive"), Node.objects.get(hostname="dead")


def test_an_outage_of_the_control_plane_marks_no_node_down(alive_and_dead, agent):
    alive, dead = alive_and_dead
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(0)) == 0
    # The web was away for 90 s: nobody's heartbeat arrived.
    for seconds in (15, 30, 45, 60, 75, 90):
        assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(seconds)) == 0
    assert set(states().values()) == {"ready"}
    heard(alive, at(92))  # back: `alive` heartbeats again, `dead` never will
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(105)) == 0
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(150)) == 0  # hearing again for 45 s only
    heard(alive, at(160))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(165)) == 1  # a full timeout after it heard again
    assert states() == {"alive": "ready", "dead": "down"}


def test_one_dead_node_among_live_ones_goes_down_at_the_timeout(alive_and_dead):
    alive, dead = alive_and_dead
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(0)) == 0
    for seconds in (15, 30, 45, 60):
        heard(alive, at(seconds))
        assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(seconds)) == 0
    heard(alive, at(61))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(61)) == 1
    assert states() == {"alive": "ready", "dead": "down"}
    assert Node.objects.get(hostname="dead").state_reason == "no heartbeat for 60 s"


def test_a_detector_that_did_not_run_for_the_timeout_gives_the_nodes_a_full_timeout(alive_and_dead):
    alive, dead = alive_and_dead
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(0), check_every_s=15) == 0
    heard(alive, at(100))  # beat or the worker were away from 0 to 100 s; the web heard `alive`
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(100), check_every_s=15) == 0
    heard(alive, at(115))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(115), check_every_s=15) == 0
    for seconds in (130, 145, 160):
        heard(alive, at(seconds))
        assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(seconds), check_every_s=15) == 0
    heard(alive, at(175))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT, now=at(175), check_every_s=15) == 1
    assert states() == {"alive": "ready", "dead": "down"}
    watch = SilenceWatch.objects.get()
    assert not watch.deaf and watch.hearing_since is not None


def test_the_only_node_of_a_cluster_still_goes_down_when_silent(node1):
    """One node's silence says nothing about the control plane: it is declared as before."""
    heard(node1, timezone.now() - timedelta(seconds=120))
    assert nodes_mark_silent_down(timeout_s=TIMEOUT) == 1


# --- what agents learn

def test_heartbeat_and_registration_answers_carry_the_fence_time(client_for, agent, node1):
    body = client_for(agent).post(f"/api/nodes/{node1.pk}/heartbeat/").json()
    assert (body["heartbeat_timeout_s"], body["fence_after_s"]) == (60, 54)
    with override_settings(GOGH_NODE_HEARTBEAT_TIMEOUT_S=10):
        body = client_for(agent).post("/api/nodes/register/", node_report(), format="json").json()
    assert (body["heartbeat_timeout_s"], body["fence_after_s"]) == (10, 8) and body["hostname"] == "node1"
