"""Fixtures for the inventory tests: GPU types with product names, a registered node, an API caller."""
import pytest

from catalog.models import GpuType
from telemetry.models import Gpu
from telemetry.services import node_register
from telemetry.services.admission import node_approve

from .reports import node_report


@pytest.fixture
def gpu_types(v100, k80):
    """v100, k80 and p100 with the NVML product-name substrings the reference catalog gives them."""
    v100.product_names = ["V100"]
    v100.save()
    k80.product_names = ["Tesla K80"]
    k80.save()
    p100 = GpuType.objects.create(
        name="p100", memory_gb=16, tdp_w=250, idle_w=30, power_curve=[[0, 30], [1, 250]], product_names=["P100"]
    )
    return {"v100": v100, "k80": k80, "p100": p100}


@pytest.fixture
def node1(gpu_types, agent):
    """node1 with four V100s, registered by the `agent` account and approved (it takes jobs)."""
    node, _ = node_register(agent_user=agent, **node_report())
    return node_approve(node=node, by=None)


@pytest.fixture
def gpus(node1):
    """node1's GPUs by index."""
    return list(Gpu.objects.filter(node=node1).order_by("index"))


@pytest.fixture
def register(client_for):
    """register(user, body) -> response of POST /api/nodes/register/."""

    def post(user, body):
        return client_for(user).post("/api/nodes/register/", body, format="json")

    return post
