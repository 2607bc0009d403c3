"""Serializer fields every app's API needs beyond DRF's own: numbers that are numbers,
timestamps that say their zone, integers that fit their column."""
import math

from django.utils import timezone
from rest_framework import serializers

_SMALLINT_MAX = 2**15 - 1
_INT_MAX = 2**31 - 1
_BIGINT_MAX = 2**63 - 1
_COLUMN_MAX = {
    "SmallIntegerField": _SMALLINT_MAX, "PositiveSmallIntegerField": _SMALLINT_MAX, "SmallAutoField": _SMALLINT_MAX,
    "IntegerField": _INT_MAX, "PositiveIntegerField": _INT_MAX, "AutoField": _INT_MAX,
    "BigIntegerField": _BIGINT_MAX, "PositiveBigIntegerField": _BIGINT_MAX, "BigAutoField": _BIGINT_MAX,
}


def column_max(model, field: str) -> int:
    """The largest integer the column holds (PostgreSQL's limits; SQLite's INTEGER stops at
    2**63 - 1): input limits follow the columns, so a number too large is a 400 and not the
    database's overflow error. A KeyError names a column type this table does not know yet."""
    return _COLUMN_MAX[model._meta.get_field(field).get_internal_type()]


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
