"""The Cluster page's node table says who manages each node (its agent, or Slurm) and names the
GPUs a run GOGH did not submit holds; the GPUs-by-type table counts them as held."""
import pytest
from django.test import Client

from gogh_web.dashboard import selectors
from telemetry.models import Gpu, GpuState
from telemetry.services.executor_inventory import executor_inventory_apply

HOLDER = "someone-else (Slurm job 12)"


@pytest.fixture
def slurm_node(cluster, v100):
    """gpu-a (an agent's, from `cluster`) and n-v100 from Slurm's inventory with GPU 1 held and
    GPU 3 held but gone missing."""
    executor_inventory_apply(manager="slurm", holders={("n-v100", 1): HOLDER},
                             nodes=[{"name": "n-v100", "up": True, "reason": "", "gpus": {"v100": 4}}])
    Gpu.objects.filter(uuid="slurm:n-v100:3").update(state=GpuState.MISSING, external_holder="gone")


def test_the_overview_rows_say_who_manages_each_node_and_what_is_held(slurm_node):
    overview = selectors.cluster_overview()
    rows = {row["hostname"]: row for row in overview["node_rows"]}
    assert (rows["gpu-a"]["managed_by_label"], rows["n-v100"]["managed_by_label"]) == ("GOGH agent", "Slurm")
    assert rows["gpu-a"]["held"] == []
    assert [(g["index"], g["external_holder"]) for g in rows["n-v100"]["held"]] == [(1, HOLDER)]  # not the missing one
    assert [(row["gpu_type"], row["held"]) for row in overview["gpu_type_rows"]] == [("v100", 1)]
    assert [row["managed_by"] for row in overview["nodes"]] == ["agent", "slurm"]  # the live dicts the script reads


def test_the_page_shows_the_manager_column_and_the_holder(slurm_node, alice):
    client = Client()
    client.force_login(alice)
    page = client.get("/dashboard/").content.decode()
    assert "<th>Managed by</th>" in page
    assert '<td class="managed-by">Slurm</td>' in page and '<td class="managed-by">GOGH agent</td>' in page
    assert f'<small class="held">GPU 1 held by {HOLDER}</small>' in page
    assert ">held 1</span>" in page
    assert "held by gone" not in page
