"""What agents report of power limits: the range and default at registration, the limit in
force and the last refusal with each heartbeat; bad reports are 400s that store nothing."""
import pytest

from telemetry.live import gpus_snapshot
from telemetry.models import Gpu, Node

from .reports import gpu_report, node_report

RANGE = {"power_limit_min_w": 100.0, "power_limit_max_w": 300.0, "power_limit_default_w": 300.0,
         "power_limit_w": 300.0}


def heartbeat(client_for, user, node, body):
    return client_for(user).post(f"/api/nodes/{node.pk}/heartbeat/", body, format="json")


def rows():
    return list(Gpu.objects.order_by("pk").values())


def test_registration_stores_each_gpus_range_default_and_limit_in_force(register, gpu_types, agent):
    gpus = [gpu_report(0, **RANGE), gpu_report(1)]
    response = register(agent, node_report(gpus=gpus))
    assert response.status_code == 201, response.content
    first, second = Gpu.objects.order_by("index")
    assert (first.power_limit_min_w, first.power_limit_max_w, first.power_limit_default_w, first.power_limit_w) == (
        100, 300, 300, 300)
    assert second.power_limit_min_w is None and second.power_limit_w is None
    assert response.json()["gpus"][0]["power_limit_w"] == 300  # the answer shows the agent the fields are known


@pytest.mark.parametrize("change,field", [
    ({"power_limit_min_w": 0}, "power_limit_min_w"),
    ({"power_limit_max_w": 2000.5}, "power_limit_max_w"),
    ({"power_limit_w": -5}, "power_limit_w"),
    ({"power_limit_default_w": "lots"}, "power_limit_default_w"),
    ({"power_limit_w": "NaN"}, "power_limit_w"),
    ({"power_limit_w": True}, "power_limit_w"),
])
def test_a_registration_with_an_impossible_limit_is_400_naming_it_and_stores_nothing(register, gpu_types, agent,
                                                                                     change, field):
    response = register(agent, node_report(gpus=[gpu_report(0, **{**RANGE, **change})]))
    assert response.status_code == 400
    assert field in response.json()["gpus"][0]
    assert Node.objects.count() == 0 and Gpu.objects.count() == 0


@pytest.mark.parametrize("change,field", [
    ({"power_limit_min_w": 350.0}, "gpus[0].power_limit_min_w"),
    ({"power_limit_default_w": 50.0}, "gpus[0].power_limit_default_w"),
])
def test_a_range_that_is_no_range_is_400_and_stores_nothing(register, gpu_types, agent, change, field):
    response = register(agent, node_report(gpus=[gpu_report(0, **{**RANGE, **change})]))
    assert response.status_code == 400 and field in response.json()
    assert Gpu.objects.count() == 0


def test_a_heartbeat_stores_the_limit_in_force_and_the_refusal_and_an_applied_limit_clears_it(client_for, node1,
                                                                                              agent):
    refused = {"gpus": [{"uuid": "GPU-node1-0", "power_limit_w": 300.0, "power_limit_error": "no permission"}]}
    assert heartbeat(client_for, agent, node1, refused).status_code == 200
    gpu = Gpu.objects.get(uuid="GPU-node1-0")
    assert (gpu.power_limit_w, gpu.power_limit_error) == (300, "no permission")
    applied = {"gpus": [{"uuid": "GPU-node1-0", "power_limit_w": 200.0, "power_limit_error": ""}]}
    assert heartbeat(client_for, agent, node1, applied).status_code == 200
    gpu.refresh_from_db()
    assert (gpu.power_limit_w, gpu.power_limit_error) == (200, "")
    assert heartbeat(client_for, agent, node1, {}).status_code == 200  # no report: kept as it was
    gpu.refresh_from_db()
    assert gpu.power_limit_w == 200
    listed = client_for(agent).get(f"/api/gpus/{gpu.pk}/").json()
    assert (listed["power_limit_w"], listed["power_limit_error"]) == (200, "")
    live = next(g for g in gpus_snapshot(None).values() if g["uuid"] == "GPU-node1-0")
    assert (live["power_limit_w"], live["power_limit_error"]) == (200, "")


@pytest.mark.parametrize("gpus,field", [
    ([{"uuid": "GPU-node1-0", "power_limit_w": 0}], "power_limit_w"),
    ([{"uuid": "GPU-node1-0", "power_limit_w": 2500}], "power_limit_w"),
    ([{"uuid": "GPU-node1-0", "power_limit_w": "high"}], "power_limit_w"),
    ([{"uuid": "GPU-node1-0", "power_limit_w": 200, "power_limit_error": "x" * 301}], "power_limit_error"),
    ([{"uuid": "GPU-node1-0", "power_limit_w": 200, "watts": 3}], "watts"),
])
def test_a_heartbeat_with_a_bad_limit_is_400_naming_it_and_stores_nothing(client_for, node1, agent, gpus, field):
    before = rows(), Node.objects.get(pk=node1.pk).last_heartbeat
    response = heartbeat(client_for, agent, node1, {"gpus": [{"uuid": "GPU-node1-1", "power_limit_w": 150}, *gpus]})
    assert response.status_code == 400
    assert field in response.json()["gpus"][1]
    assert (rows(), Node.objects.get(pk=node1.pk).last_heartbeat) == before


@pytest.mark.parametrize("other", ["GPU-node2-0", "GPU-node1-1"])
def test_a_heartbeat_naming_a_gpu_not_of_the_node_or_twice_is_400_and_stores_nothing(client_for, node1, agent,
                                                                                     register, other):
    register(agent, node_report("node2", gpus=[gpu_report(0, hostname="node2")]))
    before = rows()
    body = {"gpus": [{"uuid": "GPU-node1-1", "power_limit_w": 150}, {"uuid": other, "power_limit_w": 150}]}
    response = heartbeat(client_for, agent, node1, body)
    assert response.status_code == 400 and list(response.json()) == ["gpus[1].uuid"]
    assert rows() == before
