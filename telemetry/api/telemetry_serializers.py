"""Agents' telemetry reports on the wire: sample batches and job progress. Strict (unknown
fields are errors); the rules that need the database (whose GPU, whose job) are the services'."""
from rest_framework import serializers
from rest_framework.settings import api_settings

from catalog.measurement_limits import MAX_THROUGHPUT
from gogh_web.api.fields import AwareDateTimeField, FiniteFloatField, column_max
from gogh_web.api.strict import StrictFieldsMixin
from scheduler.models import Job

from ..models import Gpu, GpuSample, Node
from ..services.job_progress import REPORT_STATUSES
from ..services.samples import MAX_CLOCK_AHEAD_S, MAX_SAMPLE_AGE_S

MAX_SAMPLES_PER_BATCH = 1000
MAX_REPORTS_PER_BATCH = 1000  # a node runs at most a few jobs per GPU


def _reading(**limits) -> FiniteFloatField:
    return FiniteFloatField(required=False, default=None, allow_null=True, **limits)


def _counter(field: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=column_max(GpuSample, field)
    )


class GpuSampleSerializer(StrictFieldsMixin, serializers.Serializer):
    gpu = serializers.CharField(max_length=Gpu._meta.get_field("uuid").max_length, help_text="NVML UUID.")
    ts = AwareDateTimeField(
        help_text=f"When the GPU was read (ISO 8601 with a zone): at most {MAX_CLOCK_AHEAD_S} s ahead of the "
        f"server's clock and {MAX_SAMPLE_AGE_S // 86400} days behind it."
    )
    power_w = _reading(min_value=0, max_value=10_000)
    utilization = _reading(min_value=0, max_value=1, help_text="0..1")
    memory_used_mb = _reading(min_value=0, max_value=10_000_000)
    sm_clock_mhz = _reading(min_value=0, max_value=100_000)
    temperature_c = _reading(min_value=-100, max_value=250)
    ecc_corrected = _counter("ecc_corrected")
    ecc_uncorrected = _counter("ecc_uncorrected")
    retired_pages = _counter("retired_pages")


class SampleBatchSerializer(StrictFieldsMixin, serializers.Serializer):
    samples = GpuSampleSerializer(many=True, allow_empty=False, max_length=MAX_SAMPLES_PER_BATCH)
    dropped = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=column_max(Node, "samples_dropped"),
        help_text="Samples the agent dropped from its full buffer since it started.",
    )


class SampleBatchResultSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(
        help_text="Samples stored: one already stored (same GPU and instant), or repeated in the batch, is not "
        "counted, so a resent batch answers 0."
    )


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
    status = serializers.IntegerField(help_text="200, 400, 403 or 409.")
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
    placed_at = serializers.CharField(
        allow_null=True,
        help_text=(
            "When the job was placed (ISO 8601): changes when it is placed anew, not when only its partners change."
        ),
    )


def field_paths(errors, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as flat field paths, e.g. {"samples[3].power_w": [...]}, the shape
    the inventory's errors have."""
    if isinstance(errors, dict):
        flat = {}
        for key, value in errors.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY and prefix:
                flat.update(field_paths(value, prefix))  # "samples": the list itself is wrong
            else:
                flat.update(field_paths(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(errors, list) and errors and all(isinstance(item, (dict, list)) for item in errors):
        flat = {}
        for position, item in enumerate(errors):
            flat.update(field_paths(item, f"{prefix}[{position}]"))
        return flat
    return {prefix: [str(message) for message in errors]} if errors else {}
