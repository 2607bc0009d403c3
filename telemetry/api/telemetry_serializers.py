"""Agents' telemetry reports on the wire: sample batches. Strict (unknown fields are errors);
the rules that need the database (whose GPU) are the services'."""
from rest_framework import serializers
from rest_framework.settings import api_settings

from gogh_web.api.fields import AwareDateTimeField, FiniteFloatField, column_max
from gogh_web.api.strict import StrictFieldsMixin

from ..gpu_health import MAX_XID
from ..models import Gpu, GpuSample, Node
from ..services.samples import MAX_CLOCK_AHEAD_S, MAX_SAMPLE_AGE_S

MAX_SAMPLES_PER_BATCH = 1000


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
    # Health signals kept as the GPU's latest (Gpu.health, docs/gpu_health.md), not per sample.
    throttle_reasons = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=2**63 - 1,
        help_text="NVML's clocks event (throttle) reasons, a bit mask.",
    )
    remapped_rows = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=2**31 - 1,
        help_text="Rows remapped (correctable + uncorrectable), lifetime.",
    )
    sm_clock_max_mhz = _reading(min_value=1, max_value=100_000, help_text="The board's maximum SM clock, MHz.")
    xid_count = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=0, max_value=2**31 - 1,
        help_text="Critical XID events since the agent started (null: NVML cannot report them for this GPU).",
    )
    xid_last = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=MAX_XID,
        help_text="The last XID event's code (NVIDIA's XID catalogue).",
    )

    def validate(self, attrs):
        """An SM clock above the board's maximum is impossible: the sample, and so its batch, is refused."""
        clock, top = attrs.get("sm_clock_mhz"), attrs.get("sm_clock_max_mhz")
        if clock is not None and top is not None and clock > top:
            raise serializers.ValidationError(
                {"sm_clock_mhz": [f"{clock:g} MHz is above the board's maximum SM clock, {top:g} MHz."]}
            )
        if attrs.get("xid_last") is not None and not attrs.get("xid_count"):
            raise serializers.ValidationError({"xid_last": ["An XID code needs an xid_count of at least 1."]})
        return attrs


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
