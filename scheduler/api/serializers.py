"""Job serializers: strict input for submission, a full picture for output."""
import math

from django.utils import timezone
from rest_framework import serializers

from catalog.measurement_limits import MAX_THROUGHPUT
from catalog.models import Workload
from gogh_web.api.fields import AwareDateTimeField, column_max
from gogh_web.api.strict import StrictFieldsMixin

from ..models import Allocation, Job
from ..selectors import cluster_gpu_count, largest_gpu_memory_gb


#: The smallest T_min, one step in about 28 hours: far below it throughput / T_min overflows
#: to infinity in the fairness figures, and no real job needs a guarantee that slow.
MIN_THROUGHPUT = 1e-5


#: Variables a job's environment may set: far more than any training job needs, few enough that
#: a job's row and its assignment to an agent stay small.
MAX_ENVIRONMENT_VARIABLES = 256


class WorkloadByName(serializers.SlugRelatedField):
    default_error_messages = {
        "does_not_exist": "Unknown workload {value!r}; GET /api/workloads/ lists the known ones.",
        "invalid": "Give the workload's name as a string.",
    }

    def __init__(self, **kwargs):
        super().__init__(slug_field="name", queryset=Workload.objects.all(), **kwargs)


class JobSubmitSerializer(StrictFieldsMixin, serializers.Serializer):
    workload = WorkloadByName()
    min_throughput = serializers.FloatField(
        help_text=f"T_min: required steps per second, {MIN_THROUGHPUT:g} to {MAX_THROUGHPUT:g}."
    )
    max_gpus = serializers.IntegerField(min_value=1, help_text="D_j: the most GPUs the job may use.")
    priority = serializers.IntegerField(required=False, default=0, min_value=-1000, max_value=1000)
    total_steps = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                           max_value=column_max(Job, "total_steps"))
    memory_gb = serializers.FloatField(
        required=False, allow_null=True, default=None,
        help_text="GPU memory needed on each GPU, GB (> 0); omitted: the workload's measured peak, if known.",
    )
    deadline = AwareDateTimeField(required=False, allow_null=True, default=None)
    name = serializers.CharField(required=False, default="", allow_blank=True, max_length=120)
    command = serializers.CharField(required=False, default="", allow_blank=True, max_length=4000)
    environment = serializers.DictField(
        child=serializers.CharField(max_length=4000, allow_blank=True), required=False, default=dict
    )

    def validate_min_throughput(self, value):
        if not (math.isfinite(value) and MIN_THROUGHPUT <= value <= MAX_THROUGHPUT):
            raise serializers.ValidationError(
                f"Must be between {MIN_THROUGHPUT:g} and {MAX_THROUGHPUT:g} steps per second."
            )
        return value

    def validate_memory_gb(self, value):
        if value is None:
            return value
        if not math.isfinite(value) or value <= 0:
            raise serializers.ValidationError("Must be a finite number of GB greater than 0.")
        largest = largest_gpu_memory_gb()
        if largest is not None and value > largest:
            raise serializers.ValidationError(f"No GPU of the cluster has more than {largest:g} GB.")
        return value

    def validate_max_gpus(self, value):
        available = cluster_gpu_count()
        if value > available:
            raise serializers.ValidationError(
                f"The cluster has {available} GPU{'s' if available != 1 else ''}; a job cannot use more."
            )
        return value

    def validate_deadline(self, value):
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("The deadline is in the past.")
        return value

    def validate_environment(self, value):
        if len(value) > MAX_ENVIRONMENT_VARIABLES:
            raise serializers.ValidationError(f"At most {MAX_ENVIRONMENT_VARIABLES} variables.")
        bad = [key for key in value if not key or "=" in key or "\x00" in key]
        if bad:
            raise serializers.ValidationError(f"Invalid variable name(s): {', '.join(map(repr, bad))}.")
        return value


class JobCancelSerializer(StrictFieldsMixin, serializers.Serializer):
    """The body of POST /api/jobs/{id}/cancel/: empty, or why (kept in the job's state reason)."""

    reason = serializers.CharField(required=False, default="", allow_blank=True, max_length=200,
                                   help_text="Why the job is cancelled; shown with who cancelled it.")


class AllocationSerializer(serializers.ModelSerializer):
    gpu = serializers.CharField(source="gpu.uuid")
    node = serializers.CharField(source="gpu.node.hostname")
    gpu_type = serializers.CharField(source="gpu.gpu_type.name")
    partners = serializers.SerializerMethodField(help_text="Ids of the jobs sharing this GPU ([] alone).")

    class Meta:
        model = Allocation
        fields = ["gpu", "node", "gpu_type", "partners", "start", "end", "predicted_throughput", "predicted_power_w"]

    def get_partners(self, allocation) -> list[int]:
        return sorted(job.pk for job in allocation.partners.all())


class JobSerializer(serializers.ModelSerializer):
    workload = serializers.CharField(source="workload.name")
    tenant = serializers.CharField(source="tenant.slug")
    owner = serializers.CharField(source="owner.username")
    allocations = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "name", "workload", "tenant", "owner", "state", "pending_reason", "state_reason",
            "min_throughput", "max_gpus", "memory_gb", "priority", "total_steps", "steps_done", "deadline",
            "command", "environment", "submitted_at", "placed_at", "started_at", "finished_at",
            "allocations",
        ]
        read_only_fields = fields

    def get_allocations(self, job) -> list[dict]:
        open_ones = [a for a in job.allocations.all() if a.end is None]
        return AllocationSerializer(open_ones, many=True).data
