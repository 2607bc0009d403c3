"""Serializer fields every app's API needs beyond DRF's own: numbers that are numbers,
timestamps that say their zone, integers that fit their column."""
import math

from django.utils import timezone
from rest_framework import serializers

#: The largest value of a BigIntegerField (PostgreSQL bigint, SQLite INTEGER): larger ones
#: must be a 400, not the database's overflow error.
BIGINT_MAX = 2**63 - 1
#: The largest value of an IntegerField (PostgreSQL integer).
INT_MAX = 2**31 - 1


class FiniteFloatField(serializers.FloatField):
    """A float that is a number: DRF's FloatField takes "NaN" and "Infinity" as strings (and NaN
    passes every min/max check), and true/false as 1.0/0.0."""

    default_error_messages = {"not_finite": "A finite number is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
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
