"""Inventory serializers: strict input for agents' reports, a full picture for output.

Input serializers check the wire format only (types, lengths, unknown fields); the rules of
the inventory (host name syntax, duplicate devices, GPU types) are the service's, so they hold
for every caller.
"""
from rest_framework import serializers

from catalog.models import GpuType
from gogh_web.api.fields import FiniteFloatField
from gogh_web.api.strict import StrictFieldsMixin

from ..models import Gpu, GpuPowerCurve, Node
from ..registration_rules import MAX_LABEL_LENGTH

MAX_GPUS_PER_NODE = 256
#: The highest power limit any GPU takes is well under this (1000 W boards exist).
MAX_POWER_LIMIT_W = 2000.0


def _max_length(model, field: str) -> int:
    """Input limits follow the columns, so no string reaches the database too long for it."""
    return model._meta.get_field(field).max_length


def _optional_text(model, field: str, **kwargs) -> serializers.CharField:
    return serializers.CharField(
        required=False, default="", allow_blank=True, max_length=_max_length(model, field), **kwargs
    )


def _positive_watts(value):
    if not 0 < value <= MAX_POWER_LIMIT_W:
        raise serializers.ValidationError(f"A power limit must be above 0 W and at most {MAX_POWER_LIMIT_W:g} W.")


def _watts(help_text: str) -> FiniteFloatField:
    return FiniteFloatField(
        required=False, default=None, allow_null=True, validators=[_positive_watts], help_text=help_text
    )


class GpuReportSerializer(StrictFieldsMixin, serializers.Serializer):
    """One device as an agent reports it."""

    index = serializers.IntegerField(min_value=0, max_value=MAX_GPUS_PER_NODE - 1)
    uuid = serializers.CharField(max_length=_max_length(Gpu, "uuid"), help_text="NVML UUID.")
    gpu_type = _optional_text(GpuType, "name", help_text="GPU type name, e.g. v100.")
    product_name = _optional_text(
        Gpu, "product_name", help_text="NVML product name; mapped to a GPU type when gpu_type is not given."
    )
    pci_bus_id = _optional_text(Gpu, "pci_bus_id")
    pcie_switch = _optional_text(Gpu, "pcie_switch", help_text="Identifier of the PCIe switch the GPU sits behind.")
    numa_node = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=0, max_value=1023)
    memory_gb = FiniteFloatField(required=False, default=None, allow_null=True, max_value=4096)
    power_limit_min_w = _watts("Lowest power limit NVML allows, W.")
    power_limit_max_w = _watts("Highest power limit NVML allows, W.")
    power_limit_default_w = _watts("The board's default power limit, W.")
    power_limit_w = _watts("The power limit in force, W.")

    def validate_memory_gb(self, value):
        if value is not None and value <= 0:
            raise serializers.ValidationError("Memory must be greater than 0 GB.")
        return value


class NodeRegistrationSerializer(StrictFieldsMixin, serializers.Serializer):
    hostname = serializers.CharField(max_length=_max_length(Node, "hostname"), help_text="RFC 1123 host name.")
    labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=MAX_LABEL_LENGTH), required=False, default=dict
    )
    cell = _optional_text(Node, "cell")
    agent_version = _optional_text(Node, "agent_version")
    driver_version = _optional_text(Node, "driver_version", help_text="The GPU driver's version (NVML).")
    gpus = GpuReportSerializer(many=True, max_length=MAX_GPUS_PER_NODE)


class EmptyBodySerializer(StrictFieldsMixin, serializers.Serializer):
    """Actions that take no input still refuse fields, so a client's mistake is not silent."""


class GpuPowerLimitReportSerializer(StrictFieldsMixin, serializers.Serializer):
    """One GPU's power limit as its agent last found it."""

    uuid = serializers.CharField(max_length=_max_length(Gpu, "uuid"))
    power_limit_w = _watts("The power limit in force, W (null: the GPU cannot say).")
    power_limit_error = _optional_text(
        Gpu, "power_limit_error", help_text="Why the last limit asked for was refused (\"\": applied)."
    )


class HeartbeatReportSerializer(StrictFieldsMixin, serializers.Serializer):
    """A heartbeat's body: empty, or the GPU driver's version when the agent knows it, and each
    GPU's power limit in force."""

    driver_version = serializers.CharField(
        required=False, allow_blank=True, max_length=_max_length(Node, "driver_version"),
        help_text="The GPU driver's version (NVML); left as it was when absent.",
    )
    gpus = GpuPowerLimitReportSerializer(
        many=True, required=False, max_length=MAX_GPUS_PER_NODE,
        help_text="Each GPU's power limit in force and its last refusal (docs/agent.md); kept as they were if absent.",
    )


class GpuFailureSerializer(StrictFieldsMixin, serializers.Serializer):
    uuid = serializers.CharField(max_length=_max_length(Gpu, "uuid"))
    reason = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class GpuFailureReportSerializer(StrictFieldsMixin, serializers.Serializer):
    """An agent's report of GPUs that stopped working (POST /api/nodes/{id}/gpu-failures/)."""

    gpus = GpuFailureSerializer(many=True, allow_empty=False, max_length=1024)


class NodeStateChangeSerializer(StrictFieldsMixin, serializers.Serializer):
    reason = _optional_text(Node, "state_reason")


class GpuPowerCurveSerializer(serializers.ModelSerializer):
    class Meta:
        model = GpuPowerCurve
        fields = ["points", "residual_std_w", "samples", "power_limit_w", "fitted_at"]
        read_only_fields = fields


class GpuSerializer(serializers.ModelSerializer):
    node = serializers.SlugRelatedField(slug_field="hostname", read_only=True)
    gpu_type = serializers.SlugRelatedField(slug_field="name", read_only=True)
    power_curve = GpuPowerCurveSerializer(
        read_only=True, allow_null=True,
        help_text="Its own power curve fitted from its samples (docs/gpu_health.md); null until enough samples.",
    )

    class Meta:
        model = Gpu
        fields = [
            "id", "node", "index", "uuid", "gpu_type", "product_name", "pci_bus_id", "pcie_switch",
            "numa_node", "memory_gb", "state", "state_reason", "external_holder",
            "power_limit_min_w", "power_limit_max_w", "power_limit_default_w", "power_limit_w", "power_limit_error",
            # Its own speed and health (docs/gpu_health.md).
            "speed_factor", "speed_factor_std", "speed_observations", "speed_flag", "speed_flagged_at", "health",
            "power_curve",
        ]
        read_only_fields = fields


class NodeGpuSerializer(GpuSerializer):
    """A GPU inside its node: the node is the enclosing object."""

    class Meta(GpuSerializer.Meta):
        fields = [name for name in GpuSerializer.Meta.fields if name != "node"]
        read_only_fields = fields


class NodeSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="username", read_only=True)
    approved = serializers.SerializerMethodField(
        help_text="Whether an operator admitted the node; until then it receives no jobs."
    )
    approved_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True,
        help_text="The operator who approved it (null: configuration or a command).",
    )
    gpu_count = serializers.IntegerField(read_only=True)
    gpus = NodeGpuSerializer(many=True, read_only=True)

    class Meta:
        model = Node
        fields = [
            "id", "hostname", "labels", "cell", "state", "state_reason", "managed_by", "approved", "approved_at",
            "approved_by", "agent", "agent_version", "driver_version", "last_heartbeat", "registered_at", "updated_at",
            "gpu_count", "gpus",
        ]
        read_only_fields = fields

    def get_approved(self, node) -> bool:
        return node.approved_at is not None


class HeartbeatSerializer(serializers.ModelSerializer):
    """What an agent learns from a heartbeat: whether it should keep taking work."""

    class Meta:
        model = Node
        fields = ["state", "state_reason", "last_heartbeat"]
        read_only_fields = fields
