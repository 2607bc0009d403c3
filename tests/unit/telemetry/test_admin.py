"""Admin: lists render, actions go through the services and report refusals."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from telemetry.models import Gpu, GpuState, Node, NodeState


@pytest.fixture
def admin_client(db):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    return client


def test_changelists_render(admin_client, node1):
    nodes = admin_client.get("/admin/telemetry/node/")
    assert nodes.status_code == 200 and b"node1" in nodes.content
    assert admin_client.get(f"/admin/telemetry/node/{node1.pk}/change/").status_code == 200
    assert admin_client.get("/admin/telemetry/gpu/?q=GPU-node1-2").status_code == 200


def test_node_actions(admin_client, node1):
    url = "/admin/telemetry/node/"
    admin_client.post(url, {"action": "drain", "_selected_action": [node1.pk]})
    node1.refresh_from_db()
    assert (node1.state, node1.state_reason) == (NodeState.DRAINING, "drained by root")
    admin_client.post(url, {"action": "mark_down", "_selected_action": [node1.pk]})
    node1.refresh_from_db()
    assert node1.state == NodeState.DOWN
    response = admin_client.post(url, {"action": "undrain", "_selected_action": [node1.pk]}, follow=True)
    assert b"cannot be set to ready" in response.content
    assert Node.objects.get(pk=node1.pk).state == NodeState.DOWN


def test_gpu_actions(admin_client, node1):
    gpu = Gpu.objects.get(index=2)
    admin_client.post("/admin/telemetry/gpu/", {"action": "disable", "_selected_action": [gpu.pk]})
    gpu.refresh_from_db()
    assert (gpu.state, gpu.state_reason) == (GpuState.DISABLED, "disabled by root")
    admin_client.post("/admin/telemetry/gpu/", {"action": "enable", "_selected_action": [gpu.pk]})
    gpu.refresh_from_db()
    assert gpu.state == GpuState.HEALTHY


def test_clearing_the_at_risk_flag_of_gpus_reports_those_not_at_risk(admin_client, node1):
    risky, quiet = Gpu.objects.get(index=0), Gpu.objects.get(index=1)
    Gpu.objects.filter(pk=risky.pk).update(health={"remapped_rows": 3, "first": {"remapped_rows": 1},
                                                   "at_risk": "remapped rows rose from 1 to 3", "notes": []})
    response = admin_client.post("/admin/telemetry/gpu/", {"action": "clear_at_risk",
                                                           "_selected_action": [risky.pk, quiet.pk]}, follow=True)
    assert b"1 cleared." in response.content and b"is not at risk" in response.content
    health = Gpu.objects.get(pk=risky.pk).health
    assert "at_risk" not in health and health["first"] == {"remapped_rows": 3} and health["cleared"]["by"] == "root"
    assert Gpu.objects.get(pk=quiet.pk).health == {}
