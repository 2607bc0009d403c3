"""Pure rules: host names, labels, devices of a report, and the state machine."""
import pytest

from telemetry import lifecycle
from telemetry.models import GpuState, NodeState
from telemetry.registration_rules import hostname_error, label_errors, normalize_hostname, registration_errors


@pytest.mark.parametrize(
    "name", ["node1", "gpu-07.rack3.example.org", "a", "1node", "x" * 63, ".".join(["a" * 63] * 3)]
)
def test_valid_hostnames(name):
    assert hostname_error(name) is None


@pytest.mark.parametrize(
    "name",
    ["", "-node", "node-", "no_de", "node..x", "node.", "x" * 64, "nöde", "a b", ".".join(["a" * 63] * 4 + ["b"])],
)
def test_invalid_hostnames(name):
    assert hostname_error(name)


def test_hostnames_are_stored_lower_case():
    assert normalize_hostname("  Node1.Example.ORG ") == "node1.example.org"


@pytest.mark.parametrize("labels", [["rack"], "rack=r1", {"rack": 1}, {"": "x"}, {f"k{i}": "v" for i in range(65)}])
def test_bad_labels(labels):
    assert label_errors(labels)


def test_report_errors_are_keyed_by_field_path():
    errors = registration_errors(
        hostname="node1",
        labels={},
        gpus=[
            {"index": 0, "uuid": "GPU-a", "gpu_type": "v100"},
            {"index": 0, "uuid": "GPU-a", "gpu_type": "v100"},
            {"index": -1, "uuid": "", "product_name": "Tesla T4"},
            {"index": 3, "uuid": "GPU-d"},
            "not a device",
        ],
    )
    assert errors["gpus[1].index"] == ["Index 0 is also given by gpus[0]."]
    assert errors["gpus[1].uuid"] == ["UUID GPU-a is also given by gpus[0]."]
    assert "gpus[2].index" in errors and "gpus[2].uuid" in errors
    assert "gpus[3].gpu_type" in errors
    assert "gpus[4]" in errors
    assert not any(key.startswith("gpus[0]") for key in errors)


def test_state_values_match_the_models():
    assert set(NodeState.values) == lifecycle.NODE_STATES
    assert set(GpuState.values) == lifecycle.GPU_STATES


def test_reports_revive_down_nodes_and_nodes_their_agent_was_leaving():
    assert lifecycle.node_state_after_report("down", drained=False) == "ready"
    assert lifecycle.node_state_after_report("draining", drained=False) == "ready"
    assert lifecycle.node_state_after_report("draining", drained=True) == "draining"
    assert lifecycle.node_state_after_report("ready", drained=False) == "ready"


@pytest.mark.parametrize("target", ["ready", "draining"])
def test_operators_cannot_revive_or_drain_a_down_node(target):
    with pytest.raises(lifecycle.IllegalTransition, match="agent reports"):
        lifecycle.check_node_operator_move("down", target)


def test_operators_cannot_touch_missing_gpus():
    with pytest.raises(lifecycle.IllegalTransition):
        lifecycle.check_gpu_operator_move("missing", "healthy")
    with pytest.raises(lifecycle.IllegalTransition):
        lifecycle.check_gpu_operator_move("healthy", "missing")
