"""Catalog serializers: all validation of API input happens here; writes go to services."""
from django.db import models
from django.utils import timezone
from rest_framework import serializers

from gogh_web.api.fields import AwareDateTimeField, FiniteFloatField, column_max
from gogh_web.api.poison import shown_key
from gogh_web.api.strict import StrictFieldsMixin

from ..measurement_limits import MAX_GPU_MEMORY_GB, MAX_NUM_GPUS, MAX_POWER_PER_GPU_W, limit_problems
from ..models import GpuType, Measurement, MeasurementSource, Workload
from .fields import ByName

#: Most measurements one POST may carry.
MAX_BATCH = 1000
_UNIT_RANGE = {"min_value": 0, "max_value": 1}
#: Bounds of the free-form JSON columns: a provenance entry names a field (short) and a source
#: (a sentence, a URL); NVML product names have at most 96 characters.
MAX_PROVENANCE_ENTRIES = 64
MAX_PROVENANCE_KEY_LENGTH = 64
MAX_PROVENANCE_SOURCE_LENGTH = 500
MAX_PRODUCT_NAMES = 32
MAX_PRODUCT_NAME_LENGTH = 96


def _positive(value):
    if value <= 0:
        raise serializers.ValidationError("Must be greater than 0.")
    return value


def _check_provenance(value):
    if not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
        raise serializers.ValidationError('Give an object {"field": "source", ...}.')
    if len(value) > MAX_PROVENANCE_ENTRIES:
        raise serializers.ValidationError(f"At most {MAX_PROVENANCE_ENTRIES} entries.")
    problems = [f"Key '{shown_key(key)}': longer than {MAX_PROVENANCE_KEY_LENGTH} characters."
                for key in value if len(key) > MAX_PROVENANCE_KEY_LENGTH]
    problems += [f"Source of '{key}': longer than {MAX_PROVENANCE_SOURCE_LENGTH} characters."
                 for key, source in value.items()
                 if len(key) <= MAX_PROVENANCE_KEY_LENGTH and len(source) > MAX_PROVENANCE_SOURCE_LENGTH]
    if problems:
        raise serializers.ValidationError(problems)
    return value


class CatalogModelSerializer(StrictFieldsMixin, serializers.ModelSerializer):
    """Strict about unknown fields, NaN/infinite numbers and timestamps without a timezone."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.FloatField: FiniteFloatField,
        models.DateTimeField: AwareDateTimeField,
    }


class GpuTypeSerializer(CatalogModelSerializer):
    class Meta:
        model = GpuType
        fields = [
            "name", "description", "memory_gb", "tdp_w", "idle_w", "power_curve", "provenance",
            "product_names", "created_at", "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {
            "memory_gb": {"max_value": MAX_GPU_MEMORY_GB},
            "tdp_w": {"max_value": MAX_POWER_PER_GPU_W},
            "idle_w": {"min_value": 0},
        }

    def validate_memory_gb(self, value):
        return _positive(value)

    def validate_tdp_w(self, value):
        return _positive(value)

    def validate(self, attrs):
        # The model's check constraint again, so that the error names the field (and PATCH of
        # either value is checked against the stored other one).
        tdp_w = attrs.get("tdp_w", getattr(self.instance, "tdp_w", None))
        idle_w = attrs.get("idle_w", getattr(self.instance, "idle_w", None))
        if tdp_w is not None and idle_w is not None and idle_w > tdp_w:
            raise serializers.ValidationError({"idle_w": ["Idle power must lie between 0 W and the TDP."]})
        return attrs

    def validate_product_names(self, value):
        if not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
            raise serializers.ValidationError("Give a list of non-empty NVML product-name substrings.")
        if len(value) > MAX_PRODUCT_NAMES:
            raise serializers.ValidationError(f"At most {MAX_PRODUCT_NAMES} product names.")
        if any(len(name) > MAX_PRODUCT_NAME_LENGTH for name in value):
            raise serializers.ValidationError(f"A product name has at most {MAX_PRODUCT_NAME_LENGTH} characters.")
        return value

    def validate_provenance(self, value):
        return _check_provenance(value)


class WorkloadSerializer(CatalogModelSerializer):
    class Meta:
        model = Workload
        fields = [
            "id", "name", "family", "batch_size", "kind", "description", "parameters", "flops_per_sample",
            "compute_density", "memory_intensity", "communication_overhead", "provenance", "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {
            "batch_size": {"min_value": 1, "max_value": column_max(Workload, "batch_size")},
            "parameters": {"min_value": 0, "max_value": column_max(Workload, "parameters")},
            "flops_per_sample": {"min_value": 0},
            "compute_density": _UNIT_RANGE,
            "memory_intensity": _UNIT_RANGE,
            "communication_overhead": _UNIT_RANGE,
        }

    def validate_provenance(self, value):
        return _check_provenance(value)


class MeasurementListSerializer(serializers.ListSerializer):
    """A batch, all or nothing. Errors name the index of each bad item: {"3": {"throughput": [...]}}."""

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, list) and all(isinstance(item, dict) for item in exc.detail):
                raise serializers.ValidationError({str(i): item for i, item in enumerate(exc.detail) if item}) from None
            raise


class MeasurementSerializer(CatalogModelSerializer):
    workload = ByName("workload", Workload.objects.all())
    gpu_type = ByName("GPU type", GpuType.objects.all())
    partner = ByName("partner workload", Workload.objects.all(), required=False, allow_null=True)

    class Meta:
        model = Measurement
        fields = [
            "id", "workload", "gpu_type", "num_gpus", "consolidated", "partner", "throughput",
            "partner_throughput", "power_w", "utilization", "memory_gb", "source", "reference", "observed_at",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {
            "num_gpus": {"min_value": 1, "max_value": MAX_NUM_GPUS},
            "throughput": {"min_value": 0},
            "partner_throughput": {"min_value": 0},
            "power_w": {"min_value": 0},
            "memory_gb": {"min_value": 0},
            "utilization": _UNIT_RANGE,
            "observed_at": {"required": False, "help_text": "When it was measured; default: when it arrives."},
        }
        list_serializer_class = MeasurementListSerializer

    def validate_source(self, value):
        request = self.context.get("request")
        if value == MeasurementSource.REFERENCE and not (request and request.user.is_staff):
            raise serializers.ValidationError("Only staff may write reference measurements.")
        return value

    def validate(self, attrs):
        if attrs.get("partner_throughput") is not None and attrs.get("partner") is None:
            raise serializers.ValidationError({"partner_throughput": ["Only a measurement with a partner has one."]})
        problems = limit_problems(
            now=timezone.now(), num_gpus=attrs.get("num_gpus", 1),
            gpu_memory_gb=getattr(attrs.get("gpu_type"), "memory_gb", None),
            **{k: attrs.get(k) for k in ("throughput", "partner_throughput", "power_w", "memory_gb", "observed_at")},
        )
        if problems:
            raise serializers.ValidationError({field: [reason] for field, reason in problems.items()})
        return attrs
