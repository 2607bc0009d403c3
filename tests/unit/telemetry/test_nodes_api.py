"""/api/nodes/ and /api/gpus/: register, heartbeat, drain, lists, and every bad input a 400."""
import json

import pytest

from telemetry.models import Gpu, Node, NodeState
from telemetry.services import node_register, node_set_state

from .reports import gpu_report, node_report


def test_register_creates_201_then_200(register, gpu_types, agent):
    first = register(agent, node_report())
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["hostname"] == "node1" and body["state"] == "ready" and body["agent"] == "agent-node1"
    assert body["gpu_count"] == 4 and [g["index"] for g in body["gpus"]] == [0, 1, 2, 3]
    again = register(agent, node_report())
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Node.objects.count() == 1 and Gpu.objects.count() == 4


def test_register_by_staff_is_allowed(register, gpu_types, staff):
    assert register(staff, node_report()).status_code == 201


def test_register_takeover_is_403(register, node1, make_user):
    before = Node.objects.filter(pk=node1.pk).values().get(), list(Gpu.objects.order_by("pk").values())
    other = make_user("agent-other", agent=True)
    response = register(other, node_report(labels={"rack": "r9"}, cell="cell-z", gpus=[gpu_report(0)]))
    assert response.status_code == 403
    assert (Node.objects.filter(pk=node1.pk).values().get(), list(Gpu.objects.order_by("pk").values())) == before


def test_register_needs_an_agent_or_staff(register, gpu_types, alice, client_for):
    assert register(alice, node_report()).status_code == 403
    assert client_for(None).post("/api/nodes/register/", node_report(), format="json").status_code == 401


def test_unmappable_product_name_is_400_naming_the_device(register, gpu_types, agent):
    gpus = [gpu_report(0), gpu_report(1), gpu_report(2, gpu_type="", product_name="Matrox G200"), gpu_report(3)]
    response = register(agent, node_report(gpus=gpus))
    assert response.status_code == 400
    assert list(response.json()) == ["gpus[2].product_name"]
    assert Node.objects.count() == 0


def test_uuid_on_another_node_is_400(register, node1, agent):
    response = register(agent, node_report("node2", gpus=[gpu_report(0, uuid="GPU-node1-0")]))
    assert response.status_code == 400 and "gpus[0].uuid" in response.json()


@pytest.mark.parametrize(
    "change,field",
    [
        ({"labels": ["rack"]}, "labels"),
        ({"labels": {"rack": {"nested": 1}}}, "labels"),
        ({"gpus": {"index": 0}}, "gpus"),
        ({"gpus": "GPU-0"}, "gpus"),
        ({"hostname": "bad_host"}, "hostname"),
        ({"hostname": "-node"}, "hostname"),
        ({"hostname": ""}, "hostname"),
        ({"hostname": None}, "hostname"),
        ({"hostname": "x" * 254}, "hostname"),
        ({"cell": "c" * 65}, "cell"),
        ({"colour": "blue"}, "colour"),
        ({"gpus": [gpu_report(-1)]}, "gpus"),
        ({"gpus": [gpu_report(True)]}, "gpus"),
        ({"gpus": [gpu_report(0, uuid="x" * 81)]}, "gpus"),
        ({"gpus": [gpu_report(0, numa_node=-1)]}, "gpus"),
        ({"gpus": [gpu_report(0, memory_gb=0)]}, "gpus"),
        ({"gpus": [gpu_report(0, memory_gb="lots")]}, "gpus"),
        ({"gpus": [gpu_report(0, memory_gb="NaN")]}, "gpus"),  # NaN passes every min/max check
        ({"gpus": [gpu_report(0, colour="blue")]}, "gpus"),
        ({"gpus": ["GPU-0"]}, "gpus"),
        ({"gpus": [gpu_report(0), gpu_report(0, uuid="GPU-other")]}, "gpus[1].index"),
        ({"gpus": [gpu_report(0), gpu_report(1, uuid="GPU-node1-0")]}, "gpus[1].uuid"),
        ({"gpus": [gpu_report(0, gpu_type="")]}, "gpus[0].gpu_type"),
        ({"gpus": [gpu_report(0, gpu_type="b200")]}, "gpus[0].gpu_type"),
    ],
)
def test_bad_registrations_are_400_with_the_field(register, gpu_types, agent, change, field):
    body = {**node_report(), **change}
    response = register(agent, body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Node.objects.count() == 0


def test_overflowing_number_is_400(client_for, gpu_types, agent):
    body = json.dumps(node_report(gpus=[gpu_report(0, memory_gb=1.5)])).replace("1.5", "1e400")
    response = client_for(agent).post("/api/nodes/register/", body, content_type="application/json")
    assert response.status_code == 400 and "gpus" in response.json()


def test_missing_required_fields_and_non_object_bodies_are_400(register, gpu_types, agent):
    response = register(agent, {})
    assert response.status_code == 400 and {"hostname", "gpus"} <= set(response.json())
    assert register(agent, [node_report()]).status_code == 400


def test_too_many_gpus_is_400(register, gpu_types, agent):
    gpus = [gpu_report(i) for i in range(257)]
    assert register(agent, node_report(gpus=gpus)).status_code == 400


def test_heartbeat_by_own_agent(client_for, node1, agent):
    response = client_for(agent).post(f"/api/nodes/{node1.pk}/heartbeat/", format="json")
    assert response.status_code == 200
    assert response.json()["state"] == "ready"


def test_heartbeat_by_staff(client_for, node1, staff):
    assert client_for(staff).post(f"/api/nodes/{node1.pk}/heartbeat/").status_code == 200


def test_heartbeat_by_another_agent_is_403(client_for, node1, make_user):
    other = make_user("agent-other", agent=True)
    assert client_for(other).post(f"/api/nodes/{node1.pk}/heartbeat/").status_code == 403


def test_heartbeat_by_a_user_is_403_and_anonymous_401(client_for, node1, alice):
    assert client_for(alice).post(f"/api/nodes/{node1.pk}/heartbeat/").status_code == 403
    assert client_for(None).post(f"/api/nodes/{node1.pk}/heartbeat/").status_code == 401


def test_heartbeat_of_unknown_node_is_404_and_fields_are_400(client_for, node1, agent):
    assert client_for(agent).post("/api/nodes/999999/heartbeat/").status_code == 404
    response = client_for(agent).post(f"/api/nodes/{node1.pk}/heartbeat/", {"load": 1}, format="json")
    assert response.status_code == 400 and "load" in response.json()


def test_heartbeat_revives_a_down_node(client_for, node1, agent):
    node_set_state(node=node1, state=NodeState.DOWN, reason="no heartbeat for 60 s")
    body = client_for(agent).post(f"/api/nodes/{node1.pk}/heartbeat/").json()
    assert body["state"] == "ready" and body["state_reason"] == ""


def test_drain_and_undrain_by_staff(client_for, node1, staff):
    client = client_for(staff)
    drained = client.post(f"/api/nodes/{node1.pk}/drain/", {"reason": "new PSU"}, format="json")
    assert drained.status_code == 200 and drained.json()["state"] == "draining"
    assert drained.json()["state_reason"] == "new PSU"
    undrained = client.post(f"/api/nodes/{node1.pk}/undrain/")
    assert undrained.status_code == 200 and undrained.json()["state"] == "ready"
    assert client.post(f"/api/nodes/{node1.pk}/drain/").json()["state_reason"] == "drained by operator"


def test_drain_is_staff_only(client_for, node1, agent, alice):
    assert client_for(agent).post(f"/api/nodes/{node1.pk}/drain/").status_code == 403
    assert client_for(alice).post(f"/api/nodes/{node1.pk}/undrain/").status_code == 403
    node1.refresh_from_db()
    assert node1.state == NodeState.READY


def test_draining_a_down_node_is_409(client_for, node1, staff):
    node_set_state(node=node1, state=NodeState.DOWN, reason="dead")
    before = Node.objects.filter(pk=node1.pk).values().get()
    response = client_for(staff).post(f"/api/nodes/{node1.pk}/drain/")
    assert response.status_code == 409
    assert Node.objects.filter(pk=node1.pk).values().get() == before  # still down, not drained


def test_drain_with_bad_body_is_400(client_for, node1, staff):
    response = client_for(staff).post(f"/api/nodes/{node1.pk}/drain/", {"reason": "x" * 201}, format="json")
    assert response.status_code == 400 and "reason" in response.json()


@pytest.fixture
def small_cluster(gpu_types, agent, make_user):
    """node1: 4 V100 in cell-a; node2: 2 K80 in cell-b (draining)."""
    node_register(agent_user=agent, **node_report())
    k80s = [gpu_report(i, hostname="node2", gpu_type="k80") for i in range(2)]
    node2, _ = node_register(agent_user=agent, **node_report("node2", gpus=k80s, cell="cell-b"))
    node_set_state(node=node2, state=NodeState.DRAINING, reason="test")


@pytest.mark.parametrize(
    "query,hostnames",
    [
        ("", ["node1", "node2"]),
        ("?state=draining", ["node2"]),
        ("?state=ready&state=draining", ["node1", "node2"]),
        ("?cell=cell-a", ["node1"]),
        ("?gpu_type=k80", ["node2"]),
        ("?gpu_type=p100", []),
        ("?ordering=-hostname", ["node2", "node1"]),
    ],
)
def test_node_list_filters(client_for, small_cluster, alice, query, hostnames):
    response = client_for(alice).get(f"/api/nodes/{query}")
    assert response.status_code == 200
    assert [node["hostname"] for node in response.json()["results"]] == hostnames


def test_node_list_gpu_count_is_not_inflated_by_type_filter(client_for, small_cluster, alice):
    body = client_for(alice).get("/api/nodes/?gpu_type=v100").json()
    assert [(n["hostname"], n["gpu_count"], len(n["gpus"])) for n in body["results"]] == [("node1", 4, 4)]


def test_bad_filter_value_is_400(client_for, small_cluster, alice):
    assert client_for(alice).get("/api/nodes/?state=sleeping").status_code == 400


def test_node_detail_and_anonymous_list(client_for, small_cluster, alice):
    node = Node.objects.get(hostname="node2")
    body = client_for(alice).get(f"/api/nodes/{node.pk}/").json()
    assert body["gpus"][0]["gpu_type"] == "k80" and "node" not in body["gpus"][0]
    assert client_for(None).get("/api/nodes/").status_code == 401


@pytest.mark.parametrize(
    "query,count",
    [("", 6), ("?node=node2", 2), ("?gpu_type=v100", 4), ("?state=healthy", 6), ("?node=node1&gpu_type=k80", 0)],
)
def test_gpu_list_filters(client_for, small_cluster, alice, query, count):
    body = client_for(alice).get(f"/api/gpus/{query}").json()
    assert body["count"] == count


def test_gpu_list_shows_node_and_type(client_for, small_cluster, alice):
    gpu = client_for(alice).get("/api/gpus/?node=node2&ordering=index").json()["results"][0]
    assert gpu["node"] == "node2" and gpu["gpu_type"] == "k80" and gpu["index"] == 0
