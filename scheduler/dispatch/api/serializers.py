"""The agents' job reports and assignments on the wire. Strict (unknown fields are errors);
the rules that need the database (whose job) are the services' (scheduler.dispatch)."""
from rest_framework import serializers

from catalog.measurement_limits import MAX_THROUGHPUT
from gogh_web.api.fields import FiniteFloatField, column_max
from gogh_web.api.strict import StrictFieldsMixin

from ...models import Job
from ...serving.traffic import MAX_P99_MS, MAX_RATE_RPS
from ..progress import REPORT_STATUSES

MAX_REPORTS_PER_BATCH = 1000  # a node runs at most a few jobs per GPU
#: A suite line is a few hundred characters; a report carries the lines of one progress interval.
MAX_MEASUREMENT_LINE = 4000
MAX_MEASUREMENTS_PER_REPORT = 100


class TrafficSerializer(StrictFieldsMixin, serializers.Serializer):
    """A service replica's traffic, as its GOGH_TRAFFIC line gave it (docs/services.md)."""

    request_rate_rps = FiniteFloatField(min_value=0, max_value=MAX_RATE_RPS,
                                        help_text="Requests per second the replica answered lately.")
    p99_ms = FiniteFloatField(required=False, default=None, allow_null=True, min_value=0, max_value=MAX_P99_MS,
                              help_text="The P99 latency it measured over them, ms (null: no request to measure).")


class JobProgressSerializer(StrictFieldsMixin, serializers.Serializer):
    job = serializers.IntegerField(min_value=1, max_value=column_max(Job, "id"))
    status = serializers.ChoiceField(choices=REPORT_STATUSES)
    steps = serializers.IntegerField(min_value=0, max_value=column_max(Job, "steps_done"))
    total_steps = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=column_max(Job, "total_steps")
    )
    steps_per_s = FiniteFloatField(  # becomes a catalog measurement: the catalog's limit
        required=False, default=None, allow_null=True, min_value=0, max_value=MAX_THROUGHPUT
    )
    exit_code = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=-255, max_value=255)
    message = serializers.CharField(required=False, default="", allow_blank=True, max_length=300)
    checkpoint_step = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=column_max(Job, "checkpoint_step"),
        help_text="The step of the run's latest checkpoint (null: none yet); every report carries it.",
    )
    checkpoint_path = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=Job._meta.get_field("checkpoint_path").max_length,
        help_text="Where that checkpoint is, for the job's next run to read.",
    )

    measurements = serializers.ListField(
        child=serializers.CharField(max_length=MAX_MEASUREMENT_LINE, allow_blank=True, trim_whitespace=False),
        required=False, default=list, max_length=MAX_MEASUREMENTS_PER_REPORT,
        help_text="A profiling job's GOGH_MEASUREMENT lines since its last report: the JSON after the prefix, "
        "as the job printed it (docs/profiling.md).",
    )
    traffic = TrafficSerializer(
        required=False, default=None, allow_null=True,
        help_text="A service replica's latest traffic since its last report (docs/services.md); only a replica of "
        "a service may send it.",
    )

    def validate(self, attrs):
        """A checkpoint is a step with a path, made at or before the run's current step."""
        step, path = attrs.get("checkpoint_step"), attrs.get("checkpoint_path", "")
        if step is None and path:
            raise serializers.ValidationError({"checkpoint_step": ["Give the step of the checkpoint at this path."]})
        if step is not None and not path:
            raise serializers.ValidationError({"checkpoint_path": ["Give the path of the checkpoint at this step."]})
        if step is not None and step > attrs["steps"]:
            raise serializers.ValidationError(
                {"checkpoint_step": [f"Checkpoint step {step} is beyond the run's step {attrs['steps']}."]}
            )
        return attrs


class JobProgressBatchSerializer(StrictFieldsMixin, serializers.Serializer):
    """The reports of a node's jobs in one request (one per turn of the agent's loop). Each item
    is checked and answered on its own, so one bad or refused report does not refuse the rest."""

    reports = serializers.ListField(
        child=serializers.DictField(), allow_empty=False, max_length=MAX_REPORTS_PER_BATCH,
        help_text="Reports as POST /api/telemetry/job-progress/ takes them (job, status, steps, ...).",
    )


class JobProgressAnswerSerializer(serializers.Serializer):
    """One report's answer, in the order of the reports: what the single-report endpoint would
    have answered (status 200 with the job's state, 400 with errors, 403 or 409 with detail)."""

    job = serializers.IntegerField(allow_null=True, help_text="The report's job, null when it named none.")
    status = serializers.IntegerField(help_text="200, 400, 403 (not an agent) or 409.")
    state = serializers.CharField(required=False)
    steps_done = serializers.IntegerField(required=False)
    detail = serializers.CharField(required=False)
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)


class JobProgressBatchResultSerializer(serializers.Serializer):
    results = JobProgressAnswerSerializer(many=True)


class AssignmentSerializer(serializers.Serializer):
    """A job the node's agent must run on the listed GPUs (its open allocations there)."""

    job = serializers.IntegerField()
    state = serializers.CharField()
    allocations = serializers.ListField(child=serializers.IntegerField())
    gpu_indexes = serializers.ListField(child=serializers.IntegerField())
    gpu_type = serializers.CharField()
    workload = serializers.CharField()
    partners = serializers.ListField(
        child=serializers.CharField(), help_text="Workloads of the jobs sharing these GPUs, sorted ([] alone)."
    )
    command = serializers.CharField()
    environment = serializers.DictField(child=serializers.CharField())
    total_steps = serializers.IntegerField(allow_null=True)
    steps_done = serializers.IntegerField()
    resume_step = serializers.IntegerField(help_text="The step a new run of the job starts at (its last checkpoint).")
    resume_checkpoint = serializers.CharField(
        allow_blank=True, help_text="The checkpoint a new run resumes from (\"\": none, it starts from step 0)."
    )
    preemption_grace_s = serializers.IntegerField(help_text="Seconds between SIGTERM and SIGKILL when it is stopped.")
    placed_at = serializers.CharField(
        allow_null=True,
        help_text=(
            "When the job was placed (ISO 8601): changes when it is placed anew, not when only its partners change."
        ),
    )
    power_limits_w = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="The power limit for each GPU of gpu_indexes, in the same order, W (null: the board's default). "
                  "A change of limit alone does not restart the job.",
    )
    power_limit_speed = serializers.FloatField(
        allow_null=True,
        help_text="The fraction of its default-limit throughput the round planned the job at under those limits "
                  "(null: at the default). Real GPUs slow the job themselves; a simulated node runs it at this speed.",
    )
