"""Serializer fields the catalog's API needs beyond DRF's own."""
import math

from django.utils import timezone
from rest_framework import serializers


class FiniteFloatField(serializers.FloatField):
    """A float that is a number: DRF's FloatField takes "NaN" and "Infinity" as strings, and
    NaN passes every min/max check."""

    default_error_messages = {"not_finite": "A finite number is required."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("not_finite")
        return value


class AwareDateTimeField(serializers.DateTimeField):
    """A timestamp with a timezone; DRF would read one without as server time, silently."""

    default_error_messages = {"naive": "Give a timezone, e.g. 2024-05-01T12:00:00Z or +02:00."}

    def enforce_timezone(self, value):
        if timezone.is_naive(value):
            self.fail("naive")
        return super().enforce_timezone(value)


class ByName(serializers.SlugRelatedField):
    """A workload or GPU type given by its name.

    Names are looked up once per request: a batch of 1000 measurements names a handful of
    workloads and GPU types, not 3000 different ones.
    """

    def __init__(self, what: str, queryset, **kwargs):
        kwargs.setdefault(
            "error_messages",
            {"does_not_exist": f"Unknown {what} {{value!r}}.", "invalid": f"Give the {what}'s name as a string."},
        )
        super().__init__(slug_field="name", queryset=queryset, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        cache = vars(self.root).setdefault("_objects_by_name", {})
        key = (self.queryset.model, data)
        if key not in cache:
            cache[key] = super().to_internal_value(data)
        return cache[key]
