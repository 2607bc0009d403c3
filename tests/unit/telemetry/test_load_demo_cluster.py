"""manage.py load_demo_cluster: needs the GPU types, registers the demo inventory idempotently."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from telemetry.agent.simulated import gpu_uuid
from telemetry.demo_inventory import DEMO_AGENT_USERNAME, DEMO_NODES
from telemetry.models import Gpu, Node

pytestmark = pytest.mark.django_db


def load() -> str:
    out = StringIO()
    call_command("load_demo_cluster", stdout=out)
    return out.getvalue()


def test_fails_clearly_without_gpu_types():
    with pytest.raises(CommandError, match="load_reference_catalog"):
        load()
    assert Node.objects.count() == 0


def test_loading_twice_gives_the_same_inventory(gpu_types):
    first = load()
    counts = (Node.objects.count(), Gpu.objects.count(), sorted(Gpu.objects.values_list("uuid", flat=True)))
    second = load()
    assert (Node.objects.count(), Gpu.objects.count(), sorted(Gpu.objects.values_list("uuid", flat=True))) == counts
    assert counts[:2] == (4, 28)
    assert "4 nodes (4 new), 28 GPUs (16 k80, 4 p100, 8 v100)" in first
    assert "(0 new)" in second and "demo-v100-01" in second


def test_demo_nodes_belong_to_the_demo_agent_and_are_approved(gpu_types):
    load()
    agents = set(Node.objects.values_list("agent__username", flat=True))
    assert agents == {DEMO_AGENT_USERNAME}
    assert not Node.objects.filter(approved_at__isnull=True).exists()  # `make demo` runs jobs at once
    demo_agent = Node.objects.first().agent
    assert demo_agent.has_perm("telemetry.act_as_agent") and not demo_agent.has_usable_password()


def test_layout_is_two_switches_over_two_numa_nodes(gpu_types):
    load()
    v100s = Gpu.objects.filter(node__hostname="demo-v100-01").order_by("index")
    assert [(g.pcie_switch, g.numa_node) for g in v100s] == [("pcie-sw0", 0)] * 4 + [("pcie-sw1", 1)] * 4
    assert v100s[5].uuid == gpu_uuid("demo-v100-01", 5)


def test_inventory_data_is_consistent():
    assert len({node.hostname for node in DEMO_NODES}) == len(DEMO_NODES)
    uuids = [gpu.uuid for node in DEMO_NODES for gpu in node.gpus]
    assert len(set(uuids)) == len(uuids)
    assert all(len(node.gpus) % 2 == 0 for node in DEMO_NODES if node.gpus[0].gpu_type == "k80")  # 2 GPUs a board
