"""The services API's bodies (docs/api.md, Services): what a POST may say (types and ranges;
the rules that need the cluster, such as a bound no GPU can meet, are service_create's), and
what a service reads as, with its replicas and, in detail, its last hour of traffic."""
from rest_framework import serializers

from gogh_web.api.strict import StrictFieldsMixin

from ..api.serializers import EnvironmentField, HiddenValuesField, WorkloadByName
from ..models import Job, Service, ServiceTraffic
from .latency import target_ms
from .validation import MAX_BATCH_SIZE, MAX_REPLICAS


class ServiceCreateSerializer(StrictFieldsMixin, serializers.Serializer):
    name = serializers.CharField(max_length=120, help_text="Its replicas are named '<name> replica k'.")
    workload = WorkloadByName(help_text="The model it serves; one step answers one batch of batch_size requests.")
    latency_bound_ms = serializers.FloatField(help_text="The SLO: P99 latency at most this many ms (> 0).")
    min_replicas = serializers.IntegerField(required=False, default=1, min_value=1, max_value=MAX_REPLICAS)
    max_replicas = serializers.IntegerField(required=False, default=1, min_value=1,
                                            help_text=f"At least min_replicas, at most {MAX_REPLICAS}.")
    batch_size = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                          max_value=MAX_BATCH_SIZE, help_text="Default: the workload's batch size.")
    expected_rate_rps = serializers.FloatField(
        required=False, default=0.0, min_value=0.0,
        help_text="Requests per second to plan for until its replicas report traffic.",
    )
    priority = serializers.IntegerField(required=False, default=0, min_value=-1000, max_value=1000)
    command = serializers.CharField(required=False, default="", allow_blank=True, max_length=4000,
                                    help_text="What an agent runs for each replica.")
    environment = EnvironmentField(required=False, default=dict, help_text="Variables of its replicas, as for jobs.")


class ReplicaSerializer(serializers.ModelSerializer):
    """A replica job: its id, state and the GPUs it holds now."""

    gpus = serializers.SerializerMethodField(help_text="The GPUs it holds now: uuid, node, type, partner job ids.")

    class Meta:
        model = Job
        fields = ["id", "name", "state", "pending_reason", "min_throughput", "gpus"]
        read_only_fields = fields

    def get_gpus(self, job) -> list[dict]:
        return [
            {"gpu": row.gpu.uuid, "node": row.gpu.node.hostname, "gpu_type": row.gpu.gpu_type.name,
             "partners": sorted(partner.pk for partner in row.partners.all())}
            for row in job.allocations.all() if row.end is None
        ]


class TrafficSerializer(serializers.ModelSerializer):
    class Meta:
        model = ServiceTraffic
        fields = ["at", "job", "request_rate_rps", "p99_ms"]
        read_only_fields = fields


class ServiceSerializer(serializers.ModelSerializer):
    workload = serializers.CharField(source="workload.name")
    tenant = serializers.CharField(source="tenant.slug")
    owner = serializers.CharField(source="owner.username")
    environment = HiddenValuesField(help_text="The variable names; each value is null: values are write-only.")
    target_p99_ms = serializers.SerializerMethodField(
        help_text="The P99 the rounds plan for: the bound less the SLO margin (bound / (1 + margin))."
    )
    slo_met = serializers.SerializerMethodField(
        help_text="Whether the last reported P99 is within the bound; null before any report."
    )
    replicas = serializers.SerializerMethodField(help_text="Its replicas not yet ended, oldest first.")

    class Meta:
        model = Service
        fields = [
            "id", "name", "workload", "tenant", "owner", "state", "latency_bound_ms", "min_replicas", "max_replicas",
            "batch_size", "expected_rate_rps", "priority", "command", "environment", "request_rate_rps", "p99_ms",
            "forecast_rps", "calibration", "speed_factor", "replicas_target", "replica_min_throughput", "slo_note",
            "planned_at", "created_at", "stopped_at", "target_p99_ms", "slo_met", "replicas",
        ]
        read_only_fields = fields

    def get_target_p99_ms(self, service) -> float:
        return target_ms(service.latency_bound_ms, self.context["margin"])

    def get_slo_met(self, service) -> bool | None:
        return None if service.p99_ms is None else service.p99_ms <= service.latency_bound_ms

    def get_replicas(self, service) -> list[dict]:
        live = [job for job in service.replicas.all() if not job.is_terminal]
        return ReplicaSerializer(live, many=True).data


class ServiceDetailSerializer(ServiceSerializer):
    traffic = serializers.SerializerMethodField(
        help_text="Its replicas' traffic reports of the last hour, newest first."
    )

    class Meta(ServiceSerializer.Meta):
        fields = [*ServiceSerializer.Meta.fields, "traffic"]
        read_only_fields = fields

    def get_traffic(self, service) -> list[dict]:
        return TrafficSerializer(self.context["traffic"], many=True).data
