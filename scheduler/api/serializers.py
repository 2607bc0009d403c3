"""Job serializers: strict input for submission, a full picture for output (but for the
environment's values: secrets, shown only to the agent of the node running the job)."""
import math
import re

from django.utils import timezone
from rest_framework import serializers

from catalog.measurement_limits import MAX_THROUGHPUT
from catalog.models import Workload
from gogh_web.api.fields import AwareDateTimeField, column_max
from gogh_web.api.poison import poison_problem, shown_key
from gogh_web.api.strict import StrictFieldsMixin

from ..models import Allocation, Job, JobInterruption
from ..models.jobs import MAX_GRACE_S
from ..selectors import cluster_gpu_count, largest_gpu_memory_gb

#: The smallest T_min, one step in about 28 hours: far below it throughput / T_min overflows
#: to infinity in the fairness figures, and no real job needs a guarantee that slow.
MIN_THROUGHPUT = 1e-5


#: Variables a job's environment may set: far more than any training job needs, few enough that
#: a job's row and its assignment to an agent stay small.
MAX_ENVIRONMENT_VARIABLES = 256
#: Limits of one variable and of them all, well under what exec accepts (128 KiB per NAME=value
#: string, about 2 MiB for the arguments and environment together, the agent's own included):
#: a job the API accepts never fails to start for its size.
MAX_VARIABLE_NAME_LENGTH = 256
MAX_VARIABLE_VALUE_LENGTH = 4000
MAX_ENVIRONMENT_BYTES = 64 * 1024
#: A portable variable name (POSIX): the job's shell command can read every variable it is given.
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Variables Slurm sets for a run, or sbatch reads as its options (a job could choose its own
#: account or limits): a job may not set them, whichever executor runs it now (docs/executors.md).
EXECUTOR_PREFIXES = ("SLURM_", "SBATCH_")
#: Longest Idempotency-Key header (the column's length).
MAX_IDEMPOTENCY_KEY_LENGTH = 200


class WorkloadByName(serializers.SlugRelatedField):
    default_error_messages = {
        "does_not_exist": "Unknown workload {value!r}; GET /api/workloads/ lists the known ones.",
        "invalid": "Give the workload's name as a string.",
    }

    def __init__(self, **kwargs):
        super().__init__(slug_field="name", queryset=Workload.objects.all(), **kwargs)


class EnvironmentField(serializers.DictField):
    """A job's environment: {"NAME": "value"}. Names are checked before values, so that an
    error about a value never repeats a name too long to show."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.CharField(max_length=MAX_VARIABLE_VALUE_LENGTH, allow_blank=True), **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            if len(data) > MAX_ENVIRONMENT_VARIABLES:
                raise serializers.ValidationError(f"At most {MAX_ENVIRONMENT_VARIABLES} variables.")
            if problems := [problem for name in data if (problem := variable_name_problem(name))]:
                raise serializers.ValidationError(problems)
        environment = super().to_internal_value(data)
        size = environment_bytes(environment)
        if size > MAX_ENVIRONMENT_BYTES:
            raise serializers.ValidationError(
                f"The variables take {size} bytes (NAME=value in UTF-8, each); at most {MAX_ENVIRONMENT_BYTES}."
            )
        return environment


def variable_name_problem(name: str) -> str | None:
    """Why `name` is no variable name, naming it (escaped and cut short: it may be anything)."""
    if len(name) > MAX_VARIABLE_NAME_LENGTH:
        return f"Invalid variable name '{shown_key(name)}': longer than {MAX_VARIABLE_NAME_LENGTH} characters."
    if not _VARIABLE_NAME.fullmatch(name):
        return (f"Invalid variable name '{shown_key(name)}': letters, digits and underscores, "
                "not starting with a digit.")
    if name.startswith(EXECUTOR_PREFIXES):
        return (f"Invalid variable name '{name}': names starting with {' or '.join(EXECUTOR_PREFIXES)} are "
                "Slurm's (it sets them, and sbatch reads them as its own options).")
    return None


def environment_bytes(environment: dict[str, str]) -> int:
    """Size of the environment as exec receives it: a NAME=value string each, NUL-terminated."""
    return sum(len(name.encode()) + len(value.encode()) + 2 for name, value in environment.items())


class HiddenValuesField(serializers.DictField):
    """An environment on read: its names, each with null for a value. The values are write-only
    secrets (a database URL, a cloud key) that only the agent of the node running the job gets,
    through its assignments; not the owner, not staff, here."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.CharField(allow_null=True), read_only=True, **kwargs)

    def to_representation(self, value):
        return dict.fromkeys(value)


def idempotency_key(header: str | None) -> str | None:
    """The Idempotency-Key header's key, None when there is none; ValidationError for a key no
    column holds (too long, or with a NUL PostgreSQL refuses)."""
    key = (header or "").strip() or None
    if key is None:
        return None
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise serializers.ValidationError({"idempotency_key": [f"At most {MAX_IDEMPOTENCY_KEY_LENGTH} characters."]})
    if problem := poison_problem(key):
        raise serializers.ValidationError({"idempotency_key": [problem]})
    return key


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
    preemption_grace_s = serializers.IntegerField(
        required=False, default=Job._meta.get_field("preemption_grace_s").default, min_value=1, max_value=MAX_GRACE_S,
        help_text="Seconds between SIGTERM and SIGKILL when the job is stopped (moved, preempted): time to "
        f"checkpoint. 1 to {MAX_GRACE_S}, default 60.",
    )
    name = serializers.CharField(required=False, default="", allow_blank=True, max_length=120)
    command = serializers.CharField(required=False, default="", allow_blank=True, max_length=4000)
    environment = EnvironmentField(
        required=False, default=dict,
        help_text=f"Variables for the job's command, {{\"NAME\": \"value\"}}: at most {MAX_ENVIRONMENT_VARIABLES}, "
        f"names of letters, digits and _ (at most {MAX_VARIABLE_NAME_LENGTH}), values of at most "
        f"{MAX_VARIABLE_VALUE_LENGTH} characters, {MAX_ENVIRONMENT_BYTES} bytes in all. Write-only values.",
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
        fields = ["gpu", "node", "gpu_type", "partners", "start", "end", "predicted_throughput", "predicted_power_w",
                  "power_limit_w", "power_limit_speed"]

    def get_partners(self, allocation) -> list[int]:
        return sorted(job.pk for job in allocation.partners.all())


#: Exploration (docs/exploration.md): the GPU type and end of the job's current probe (empty and
#: null when not probing) and how many probes it has had; read-only, set by the rounds.
JOB_PROBE_FIELDS = ["probe_gpu_type", "probe_until", "probes"]


class JobSerializer(serializers.ModelSerializer):
    workload = serializers.CharField(source="workload.name")
    tenant = serializers.CharField(source="tenant.slug")
    owner = serializers.CharField(source="owner.username")
    environment = HiddenValuesField(help_text="The variable names; each value is null: values are write-only.")
    allocations = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "name", "workload", "tenant", "owner", "state", "pending_reason", "state_reason",
            "min_throughput", "max_gpus", "memory_gb", "priority", "total_steps", "steps_done", "current_step",
            "resume_step", "checkpoint_step", "checkpoint_path", "checkpoint_at", "restarts", "steps_lost",
            "preemption_grace_s", "deadline", "command", "environment", "submitted_at", "placed_at", "started_at",
            "finished_at", "allocations", "energy_kwh", "service",
        ] + JOB_PROBE_FIELDS
        read_only_fields = fields

    def get_allocations(self, job) -> list[dict]:
        open_ones = [a for a in job.allocations.all() if a.end is None]
        return AllocationSerializer(open_ones, many=True).data


class JobInterruptionSerializer(serializers.ModelSerializer):
    """One time the job was stopped before its end to run again, why, and the work it lost."""

    solve_run = serializers.PrimaryKeyRelatedField(read_only=True, help_text="The round that moved or preempted it.")

    class Meta:
        model = JobInterruption
        fields = ["id", "kind", "reason", "at", "solve_run", "was_running", "steps_done", "resume_step", "steps_lost",
                  "overhead_s", "resumed_at"]
        read_only_fields = fields
