"""Tenant request and response shapes (docs/api.md, Tenants): strict input, a 400 naming the
field and the reason for every refusal, checked before anything is written."""
from datetime import timedelta

from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone
from rest_framework import serializers

from catalog.models import GpuType
from gogh_web.api.fields import FiniteFloatField, column_max
from gogh_web.api.strict import StrictFieldsMixin

from ..models import SolverConfig, Tenant, TenantQuota
from ..tenancy.selectors import DAY, MONTH, cluster_gpu_types

#: The longest energy bill one request reads: ten years of days.
MAX_BILL_DAYS = 3660


class WholeNumberField(serializers.IntegerField):
    """An integer given as a JSON number: DRF's IntegerField also takes "3", 3.0 and true."""

    default_error_messages = {"whole": "A whole number is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("whole")
        return super().to_internal_value(data)


class TenantSettingsSerializer(StrictFieldsMixin, serializers.Serializer):
    """Any of a tenant's settings; those not given keep their value."""

    shares = WholeNumberField(min_value=1, max_value=column_max(Tenant, "shares"), required=False)
    may_borrow = serializers.BooleanField(required=False)
    energy_budget_kwh_month = FiniteFloatField(min_value=0, allow_null=True, required=False,
                                               help_text="kWh per calendar month (UTC); null: no budget.")

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Nothing to change: give shares, may_borrow or energy_budget_kwh_month.")
        return attrs


class QuotaSerializer(StrictFieldsMixin, serializers.Serializer):
    gpu_type = serializers.CharField(max_length=GpuType._meta.get_field("name").max_length)
    gpus = WholeNumberField(min_value=0, max_value=column_max(TenantQuota, "gpus"))

    def validate_gpu_type(self, value):
        if not GpuType.objects.filter(name=value).exists():
            raise serializers.ValidationError(f"Unknown GPU type {value!r}.")
        if value not in self.context["cluster_types"]:
            raise serializers.ValidationError(
                f"The cluster has no GPU of type {value!r}: a quota on it could never be met."
            )
        return value


class QuotaSetSerializer(serializers.Serializer):
    """The whole quota set of a tenant, replacing the one it had (an empty list removes them all).
    Quotas may add up to more than the cluster has: idle quota is borrowed."""

    quotas = QuotaSerializer(many=True, allow_empty=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.context.setdefault("cluster_types", cluster_gpu_types())

    def validate_quotas(self, quotas):
        names = [q["gpu_type"] for q in quotas]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise serializers.ValidationError(f"GPU type {twice[0]!r} is given more than once.")
        types = {t.name: t for t in GpuType.objects.filter(name__in=names)}
        return {types[q["gpu_type"]]: q["gpus"] for q in quotas}


class QuotaOutSerializer(serializers.Serializer):
    gpu_type = serializers.CharField()
    gpus = serializers.IntegerField()


class FairShareOutSerializer(serializers.Serializer):
    factor = serializers.FloatField(help_text="2 ** -(usage share / shares share): 1 used nothing, 0.5 its share.")
    gpu_hours = serializers.FloatField(help_text="Decayed GPU-hours, weighted by GPU type.")
    energy_kwh = serializers.FloatField(help_text="Decayed energy.")
    updated_at = serializers.DateTimeField(allow_null=True, help_text="Until when usage is counted.")


class EnergyNowSerializer(serializers.Serializer):
    today_kwh = serializers.FloatField()
    month_kwh = serializers.FloatField()
    budget_left_kwh = serializers.FloatField(allow_null=True)
    over_budget = serializers.BooleanField()


class TenantSerializer(serializers.Serializer):
    """A tenant's overview (scheduler.tenancy.selectors.tenant_overviews), for the schema."""

    slug = serializers.CharField()
    name = serializers.CharField()
    shares = serializers.IntegerField()
    may_borrow = serializers.BooleanField()
    energy_budget_kwh_month = serializers.FloatField(allow_null=True)
    quotas = QuotaOutSerializer(many=True)
    in_use = serializers.DictField(child=serializers.IntegerField(), help_text="GPUs held now per GPU type.")
    borrowed = serializers.DictField(child=serializers.IntegerField(), help_text="GPUs held above quota per type.")
    fair_share = FairShareOutSerializer()
    energy = EnergyNowSerializer()


class EnergyQuerySerializer(serializers.Serializer):
    """?from=YYYY-MM-DD&to=YYYY-MM-DD&by=day|month; by default this UTC month so far, per day."""

    def get_fields(self):
        return {
            "from": serializers.DateField(required=False, input_formats=["iso-8601"]),
            "to": serializers.DateField(required=False, input_formats=["iso-8601"]),
            "by": serializers.ChoiceField(choices=[DAY, MONTH], required=False, default=DAY),
        }

    def validate(self, attrs):
        today = timezone.now().date()
        end = attrs.get("to", today)
        start = attrs.get("from", end.replace(day=1))
        if start > end:
            raise serializers.ValidationError({"from": ["Must not be after `to`."]})
        if end - start > timedelta(days=MAX_BILL_DAYS):
            raise serializers.ValidationError({"from": [f"At most {MAX_BILL_DAYS} days from `from` to `to`."]})
        return {"start": start, "end": end, "by": attrs["by"]}


class EnergyPeriodSerializer(serializers.Serializer):
    period = serializers.CharField(help_text="YYYY-MM-DD (by day) or YYYY-MM (by month), UTC.")
    energy_kwh = serializers.FloatField()
    gpu_hours = serializers.FloatField()


class EnergyBillSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    by = serializers.CharField()
    periods = EnergyPeriodSerializer(many=True)
    energy_kwh = serializers.FloatField(help_text="Sum over the periods.")
    gpu_hours = serializers.FloatField(help_text="Sum over the periods.")

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["from"], data["to"] = instance["start"].isoformat(), instance["end"].isoformat()
        return data


def _half_life_field():
    """The model's own bounds, so the API and the admin refuse the same values."""
    field = SolverConfig._meta.get_field("fair_share_half_life_h")
    low = next(v.limit_value for v in field.validators if isinstance(v, MinValueValidator))
    high = next(v.limit_value for v in field.validators if isinstance(v, MaxValueValidator))
    return FiniteFloatField(min_value=low, max_value=high, help_text=field.help_text)


class FairShareSettingsSerializer(StrictFieldsMixin, serializers.Serializer):
    """SolverConfig.fair_share_half_life_h: how fast a tenant's past usage is forgotten."""

    half_life_h = _half_life_field()


def bill(tenant, query: dict, periods: list[dict]) -> dict:
    return {
        "tenant": tenant.slug, "by": query["by"], "start": query["start"], "end": query["end"], "periods": periods,
        "energy_kwh": sum(p["energy_kwh"] for p in periods), "gpu_hours": sum(p["gpu_hours"] for p in periods),
    }

