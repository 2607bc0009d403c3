"""node_register: create, re-register, GPUs that come and go, ownership, all-or-nothing."""
import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from telemetry.models import Gpu, GpuState, Node, NodeState
from telemetry.services import gpu_set_state, node_register, node_set_state

from .reports import gpu_report, node_report


def states(node):
    return {gpu.uuid: gpu.state for gpu in Gpu.objects.filter(node=node)}


def test_creates_node_and_gpus(gpu_types, agent):
    node, created = node_register(agent_user=agent, **node_report("Node1.Example.org"))
    assert created
    assert node.hostname == "node1.example.org"
    assert node.agent == agent and node.state == NodeState.READY and node.last_heartbeat is not None
    assert node.labels == {"rack": "r1"} and node.cell == "cell-a" and node.agent_version == "1.0"
    gpus = list(node.gpus.order_by("index"))
    assert [(g.index, g.gpu_type.name, g.pcie_switch, g.numa_node) for g in gpus] == [
        (0, "v100", "sw0", 0), (1, "v100", "sw0", 0), (2, "v100", "sw1", 1), (3, "v100", "sw1", 1),
    ]


def test_re_registration_is_idempotent_and_updates(node1, agent):
    before = list(Gpu.objects.values_list("pk", "uuid", "index"))
    node, created = node_register(
        agent_user=agent, **node_report(labels={"rack": "r9"}, cell="cell-b", agent_version="1.1")
    )
    assert not created and node.pk == node1.pk
    assert list(Gpu.objects.values_list("pk", "uuid", "index")) == before
    assert (node.labels, node.cell, node.agent_version) == ({"rack": "r9"}, "cell-b", "1.1")
    assert Node.objects.count() == 1


def test_product_name_is_mapped_to_a_type(gpu_types, agent):
    gpus = [
        gpu_report(0, gpu_type="", product_name="Tesla K80"),
        gpu_report(1, gpu_type="", product_name="Tesla P100-PCIE-16GB"),
    ]
    node, _ = node_register(agent_user=agent, **node_report(gpus=gpus))
    assert [g.gpu_type.name for g in node.gpus.order_by("index")] == ["k80", "p100"]
    assert node.gpus.get(index=0).product_name == "Tesla K80"


def test_unmappable_product_name_names_the_field_and_writes_nothing(gpu_types, agent):
    gpus = [gpu_report(i) for i in range(3)] + [gpu_report(3, gpu_type="", product_name="NVIDIA GeForce RTX 4090")]
    with pytest.raises(ValidationError) as caught:
        node_register(agent_user=agent, **node_report(gpus=gpus))
    assert list(caught.value.error_dict) == ["gpus[3].product_name"]
    assert Node.objects.count() == 0 and Gpu.objects.count() == 0


def test_unknown_type_names_the_field(gpu_types, agent):
    with pytest.raises(ValidationError) as caught:
        node_register(agent_user=agent, **node_report(gpus=[gpu_report(0), gpu_report(1, gpu_type="b200")]))
    assert "Unknown GPU type 'b200'" in caught.value.error_dict["gpus[1].gpu_type"][0].message


def test_bad_gpu_in_re_registration_changes_nothing(node1, agent):
    gpus = [gpu_report(i, numa_node=7) for i in range(2)] + [gpu_report(2, gpu_type="nope"), gpu_report(3)]
    with pytest.raises(ValidationError):
        node_register(agent_user=agent, **node_report(gpus=gpus, cell="other"))
    node1.refresh_from_db()
    assert node1.cell == "cell-a"
    assert set(Gpu.objects.values_list("numa_node", flat=True)) == {0, 1}


def test_gpu_missing_from_report_is_kept_as_missing(node1, agent):
    node_register(agent_user=agent, **node_report(gpus=[gpu_report(i) for i in range(3)]))
    gone = Gpu.objects.get(uuid="GPU-node1-3")
    assert gone.state == GpuState.MISSING and "Not reported at registration" in gone.state_reason
    assert "was healthy" in gone.state_reason
    node_register(agent_user=agent, **node_report())
    gone.refresh_from_db()
    assert gone.state == GpuState.HEALTHY and gone.state_reason == ""


def test_failed_and_disabled_gpus_stay_so_when_reported(node1, agent):
    gpu_set_state(gpu=Gpu.objects.get(index=1), state=GpuState.DISABLED, reason="flaky")
    gpu_set_state(gpu=Gpu.objects.get(index=2), state=GpuState.FAILED, reason="ECC")
    node_register(agent_user=agent, **node_report())
    assert list(Gpu.objects.order_by("index").values_list("state", flat=True)) == [
        "healthy",
        "disabled",
        "failed",
        "healthy",
    ]


def test_new_card_can_take_the_index_of_a_missing_one(node1, agent):
    gpus = [gpu_report(i) for i in range(3)] + [gpu_report(3, uuid="GPU-replacement")]
    node_register(agent_user=agent, **node_report(gpus=gpus))
    assert Gpu.objects.get(uuid="GPU-node1-3").state == GpuState.MISSING
    assert Gpu.objects.get(uuid="GPU-replacement").index == 3


def test_indexes_may_be_swapped(node1, agent):
    gpus = [gpu_report(1, uuid="GPU-node1-0"), gpu_report(0, uuid="GPU-node1-1"), gpu_report(2), gpu_report(3)]
    node_register(agent_user=agent, **node_report(gpus=gpus))
    assert Gpu.objects.get(uuid="GPU-node1-0").index == 1 and Gpu.objects.get(uuid="GPU-node1-1").index == 0


def test_uuid_present_on_another_node_is_refused(node1, agent):
    with pytest.raises(ValidationError) as caught:
        node_register(agent_user=agent, **node_report("node2", gpus=[gpu_report(0, uuid="GPU-node1-2")]))
    assert caught.value.error_dict["gpus[0].uuid"][0].message == "GPU GPU-node1-2 is registered on node node1."


def test_a_missing_card_may_move_to_another_node(node1, agent):
    node_register(agent_user=agent, **node_report(gpus=[gpu_report(i) for i in range(3)]))
    node2, _ = node_register(agent_user=agent, **node_report("node2", gpus=[gpu_report(0, uuid="GPU-node1-3")]))
    moved = Gpu.objects.get(uuid="GPU-node1-3")
    assert moved.node == node2 and moved.index == 0 and moved.state == GpuState.HEALTHY


def test_another_agent_cannot_take_a_node_over(node1, make_user):
    intruder = make_user("agent-other", agent=True)
    with pytest.raises(PermissionDenied):
        node_register(agent_user=intruder, **node_report(cell="stolen"))
    node1.refresh_from_db()
    assert node1.cell == "cell-a"


def test_staff_can_take_a_node_over(node1, staff):
    node, created = node_register(agent_user=staff, **node_report())
    assert not created and node.agent == staff


def test_a_released_node_can_be_claimed(node1, make_user):
    Node.objects.filter(pk=node1.pk).update(agent=None)
    successor = make_user("agent-new", agent=True)
    node, _ = node_register(agent_user=successor, **node_report())
    assert node.agent == successor


def test_accounts_without_the_agent_permission_cannot_register(gpu_types, alice):
    with pytest.raises(PermissionDenied):
        node_register(agent_user=alice, **node_report())


def test_re_registration_revives_down_nodes_but_keeps_drain(node1, agent):
    node_set_state(node=node1, state=NodeState.DOWN, reason="test")
    assert node_register(agent_user=agent, **node_report())[0].state == NodeState.READY
    node_set_state(node=node1, state=NodeState.DRAINING, reason="maintenance")
    node, _ = node_register(agent_user=agent, **node_report())
    assert node.state == NodeState.DRAINING and node.state_reason == "maintenance"
