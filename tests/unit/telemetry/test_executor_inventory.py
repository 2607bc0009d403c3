"""Slurm's inventory applied to nodes and GPUs (telemetry.services.executor_inventory): nodes
created approved and managed by Slurm, placeholder GPUs by index, down and back up with their
jobs requeued exactly once, a node gone from Slurm, an agent's node taken over, foreign runs
as GPU holders, bad input writing nothing, and the same inventory twice changing nothing."""
import pytest
from django.core.exceptions import ValidationError

from scheduler.models import Allocation, Job
from telemetry import signals
from telemetry.models import Gpu, GpuState, Node, NodeState
from telemetry.services import node_register
from telemetry.services.executor_inventory import executor_inventory_apply

from .jobs import placed_job
from .reports import node_report

CLUSTER = [
    {"name": "n-k80", "up": True, "reason": "", "gpus": {"k80": 4}},
    {"name": "n-v100", "up": True, "reason": "", "gpus": {"v100": 4}},
]


@pytest.fixture
def sent():
    """The inventory signals sent, in order: (name, kwargs without the sender)."""
    record = []
    receivers = {}
    for name in ("nodes_lost", "capacity_changed"):
        def receiver(sender, name=name, **kwargs):
            record.append((name, {k: v for k, v in kwargs.items() if k != "signal"}))
        receivers[name] = receiver
        getattr(signals, name).connect(receiver, weak=False)
    yield record
    for name, receiver in receivers.items():
        getattr(signals, name).disconnect(receiver)


def apply(nodes=CLUSTER, holders=None, **kwargs):
    return executor_inventory_apply(manager="slurm", nodes=nodes, holders=holders or {}, **kwargs)


def gpu_rows(hostname):
    return list(Gpu.objects.filter(node__hostname=hostname).order_by("index").values_list(
        "index", "uuid", "gpu_type__name", "state", "external_holder"))


def snapshot():
    nodes = list(Node.objects.order_by("hostname").values_list(
        "hostname", "state", "state_reason", "managed_by", "approved_at", "updated_at"))
    gpus = list(Gpu.objects.order_by("uuid").values_list("uuid", "index", "gpu_type_id", "state", "state_reason",
                                                         "external_holder"))
    return nodes, gpus


def test_slurm_nodes_are_created_approved_with_placeholder_gpus(gpu_types, sent):
    assert apply() == {"nodes": 2, "down": 0, "up": 0, "held": 0}
    node = Node.objects.get(hostname="n-k80")
    assert (node.managed_by, node.state, node.agent, node.approved_by) == ("slurm", "ready", None, None)
    assert node.approved_at is not None
    assert gpu_rows("n-k80") == [(i, f"slurm:n-k80:{i}", "k80", "healthy", "") for i in range(4)]
    assert [name for name, _ in sent] == ["capacity_changed"]


def test_the_same_inventory_twice_writes_and_sends_nothing(gpu_types, sent):
    down = {"name": "n-p100", "up": False, "reason": "fan broken", "gpus": {"p100": 2}}
    holders = {("n-k80", 0): "someone-else (Slurm job 12)"}
    apply([*CLUSTER, down], holders)
    before, count = snapshot(), len(sent)
    assert apply([*CLUSTER, down], holders) == {"nodes": 3, "down": 0, "up": 0, "held": 1}
    assert snapshot() == before
    assert len(sent) == count


def test_an_unknown_gpu_type_is_refused_naming_it_and_writes_nothing(gpu_types, sent):
    bad = {"name": "n-a100", "up": True, "reason": "", "gpus": {"a100": 8}}
    with pytest.raises(ValidationError) as refused:
        apply([*CLUSTER, bad])
    assert refused.value.message_dict == {"nodes[2].gpus": [
        "Unknown GPU type 'a100'; known types: k80, p100, v100."]}
    assert not Node.objects.exists() and not Gpu.objects.exists()
    assert sent == []


def test_a_bad_host_name_or_manager_is_refused(gpu_types):
    with pytest.raises(ValidationError, match="not a valid host name"):
        apply([{"name": "n_k80", "up": True, "reason": "", "gpus": {}}])
    with pytest.raises(ValidationError, match="Unknown cluster manager 'agent'"):
        executor_inventory_apply(manager="agent", nodes=CLUSTER, holders={})
    assert not Node.objects.exists()


def test_a_node_down_in_slurm_goes_down_once_and_comes_back(gpu_types, alice, resnet50, sent):
    apply()
    job = placed_job(alice, resnet50, list(Gpu.objects.filter(node__hostname="n-v100"))[:2])
    sent.clear()
    drained = [CLUSTER[0], {**CLUSTER[1], "up": False, "reason": "fan broken"}]

    assert apply(drained)["down"] == 1
    node = Node.objects.get(hostname="n-v100")
    assert (node.state, node.state_reason) == ("down", "Slurm: fan broken")
    job.refresh_from_db()
    assert (job.state, job.pending_reason) == ("pending", "Node n-v100 went down: Slurm: fan broken")
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()
    assert sent == [("nodes_lost", {"node_ids": [node.pk], "reason": "Slurm: fan broken"})]

    updated = Job.objects.get(pk=job.pk).updated_at
    assert apply(drained)["down"] == 0  # already down: nothing twice
    assert len(sent) == 1 and Job.objects.get(pk=job.pk).updated_at == updated

    assert apply() == {"nodes": 2, "down": 0, "up": 1, "held": 0}
    node.refresh_from_db()
    assert (node.state, node.state_reason) == ("ready", "")
    assert sent[1:] == [("capacity_changed", {})]


def test_a_drained_node_back_up_in_slurm_stays_draining(gpu_types):
    apply()
    Node.objects.filter(hostname="n-v100").update(state=NodeState.DOWN, drained=True)
    apply()
    assert Node.objects.get(hostname="n-v100").state == "draining"


def test_a_node_gone_from_slurms_inventory_goes_down_once(gpu_types, sent):
    apply()
    sent.clear()
    assert apply(CLUSTER[:1])["down"] == 1
    node = Node.objects.get(hostname="n-v100")
    assert (node.state, node.state_reason) == ("down", "no longer in Slurm's inventory")
    assert [name for name, _ in sent] == ["nodes_lost"]
    assert apply(CLUSTER[:1])["down"] == 0
    assert len(sent) == 1


def test_a_node_an_agent_registered_is_taken_over_keeping_its_gpus(gpu_types, agent):
    node, _ = node_register(agent_user=agent, **node_report("n-v100"))
    assert node.approved_at is None  # an agent's new node waits for an operator
    real = [uuid for _, uuid, *_ in gpu_rows("n-v100")]

    apply([{**CLUSTER[1], "gpus": {"v100": 2}}])
    node.refresh_from_db()
    assert (node.managed_by, node.agent, node.approved_by) == ("slurm", agent, None)
    assert node.approved_at is not None
    assert gpu_rows("n-v100") == [
        (0, real[0], "v100", "healthy", ""), (1, real[1], "v100", "healthy", ""),
        (2, real[2], "v100", "missing", ""), (3, real[3], "v100", "missing", ""),
    ]
    assert Gpu.objects.get(uuid=real[3]).state_reason.startswith("Not in Slurm's inventory on ")


def test_gpus_beyond_the_count_go_missing_and_their_placeholders_come_back(gpu_types):
    apply()
    apply([CLUSTER[0], {**CLUSTER[1], "gpus": {"v100": 1}}])
    assert [state for *_, state, _ in gpu_rows("n-v100")] == ["healthy", "missing", "missing", "missing"]
    apply()
    assert gpu_rows("n-v100") == [(i, f"slurm:n-v100:{i}", "v100", "healthy", "") for i in range(4)]
    assert Gpu.objects.count() == 8


def test_a_gpu_type_change_in_slurm_changes_the_rows_type(gpu_types):
    apply()
    apply([CLUSTER[0], {**CLUSTER[1], "gpus": {"p100": 4}}])
    assert {gpu_type for _, _, gpu_type, *_ in gpu_rows("n-v100")} == {"p100"}


def test_holders_are_set_and_cleared_with_a_round_asked_each_time(gpu_types, sent):
    apply()
    sent.clear()
    holders = {("n-k80", 0): "someone-else (Slurm job 12)", ("n-k80", 9): "beyond the inventory",
               ("n-gone", 0): "a node GOGH does not know"}
    assert apply(holders=holders)["held"] == 1
    assert Gpu.objects.get(uuid="slurm:n-k80:0").external_holder == "someone-else (Slurm job 12)"
    assert Gpu.objects.exclude(external_holder="").count() == 1
    assert sent == [("capacity_changed", {})]

    assert apply(holders={("N-K80", 1): "x" * 300})["held"] == 1  # names as Slurm prints them; clipped
    assert Gpu.objects.get(uuid="slurm:n-k80:0").external_holder == ""
    assert Gpu.objects.get(uuid="slurm:n-k80:1").external_holder == "x" * 200
    assert len(sent) == 2


def test_holders_of_an_agents_node_are_left_alone(gpu_types, agent):
    node_register(agent_user=agent, **node_report("node1"))
    Gpu.objects.filter(node__hostname="node1", index=0).update(external_holder="set by hand")
    apply(holders={("node1", 0): "ignored: not Slurm's node"})
    assert Gpu.objects.get(node__hostname="node1", index=0).external_holder == "set by hand"


def test_a_missing_gpu_loses_its_holder(gpu_types):
    apply(holders={("n-v100", 3): "someone"})
    apply([CLUSTER[0], {**CLUSTER[1], "gpus": {"v100": 3}}], {("n-v100", 3): "someone"})
    gpu = Gpu.objects.get(uuid="slurm:n-v100:3")
    assert (gpu.state, gpu.external_holder) == (GpuState.MISSING, "")
