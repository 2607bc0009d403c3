"""Who manages a node and who holds a GPU, as the API, the admin and the live layer show them:
read-only there (Slurm's inventory sets them, telemetry.services.executor_inventory)."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from telemetry.live import gpus_snapshot, nodes_snapshot
from telemetry.models import Gpu, Node
from telemetry.services.executor_inventory import executor_inventory_apply

HOLDER = "someone-else (Slurm job 12)"


@pytest.fixture
def slurm_node(gpu_types, node1):
    """n-k80 from Slurm's inventory, its GPU 0 held by a job GOGH did not submit; node1 is an agent's."""
    executor_inventory_apply(manager="slurm", holders={("n-k80", 0): HOLDER},
                             nodes=[{"name": "n-k80", "up": True, "reason": "", "gpus": {"k80": 2}}])
    return Node.objects.get(hostname="n-k80")


def test_the_nodes_api_shows_who_manages_each_node_and_filters_by_it(client_for, alice, slurm_node):
    body = client_for(alice).get("/api/nodes/?ordering=hostname").json()["results"]
    assert [(n["hostname"], n["managed_by"]) for n in body] == [("n-k80", "slurm"), ("node1", "agent")]
    assert [g["external_holder"] for g in body[0]["gpus"]] == [HOLDER, ""]
    slurm = client_for(alice).get("/api/nodes/?managed_by=slurm").json()["results"]
    assert [n["hostname"] for n in slurm] == ["n-k80"]


def test_the_gpus_api_shows_the_holder_and_filters_held_gpus(client_for, alice, slurm_node):
    held = client_for(alice).get("/api/gpus/?held=true").json()
    assert held["count"] == 1 and held["results"][0]["external_holder"] == HOLDER
    assert held["results"][0]["node"] == "n-k80" and held["results"][0]["index"] == 0
    assert client_for(alice).get("/api/gpus/?held=false").json()["count"] == 5


def test_an_operator_cannot_change_them_through_the_api(client_for, staff, slurm_node):
    gpu = Gpu.objects.get(uuid="slurm:n-k80:0")
    answer = client_for(staff).patch(f"/api/gpus/{gpu.pk}/", {"external_holder": ""}, format="json")
    assert answer.status_code == 405
    answer = client_for(staff).patch(f"/api/nodes/{slurm_node.pk}/", {"managed_by": "agent"}, format="json")
    assert answer.status_code == 405
    assert Gpu.objects.get(pk=gpu.pk).external_holder == HOLDER
    assert Node.objects.get(pk=slurm_node.pk).managed_by == "slurm"


def test_the_admin_shows_them_read_only(slurm_node):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    nodes = client.get("/admin/telemetry/node/?managed_by__exact=slurm")
    assert nodes.status_code == 200 and b"n-k80" in nodes.content and b"node1" not in nodes.content
    node_page = client.get(f"/admin/telemetry/node/{slurm_node.pk}/change/").content.decode()
    assert "Slurm" in node_page and 'name="managed_by"' not in node_page
    gpu = Gpu.objects.get(uuid="slurm:n-k80:0")
    gpu_page = client.get(f"/admin/telemetry/gpu/{gpu.pk}/change/").content.decode()
    assert HOLDER in gpu_page and 'name="external_holder"' not in gpu_page
    assert HOLDER in client.get("/admin/telemetry/gpu/").content.decode()


def test_the_live_dicts_carry_them(slurm_node, node1):
    nodes = {n["hostname"]: n for n in nodes_snapshot(None).values()}
    assert (nodes["n-k80"]["managed_by"], nodes["node1"]["managed_by"]) == ("slurm", "agent")
    holders = {(g["node"], g["index"]): g["external_holder"] for g in gpus_snapshot(None).values()}
    assert holders[("n-k80", 0)] == HOLDER and holders[("n-k80", 1)] == "" and holders[("node1", 0)] == ""
