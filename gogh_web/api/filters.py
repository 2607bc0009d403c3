"""Query-string filters stricter than django-filter's: a bad value is a 400, never a silently
different query or a 500."""
from datetime import UTC

import django_filters
from django import forms
from django.utils.dateparse import parse_datetime
from django.utils.encoding import force_str

_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


class AwareIsoDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 time with its zone. Without one, django-filter reads server time silently;
    near year 1 or 9999 the database's conversion to UTC overflows (a 500): both are 400s."""

    default_error_messages = {
        "naive": "Give a timezone, e.g. 2024-05-01T12:00:00Z or +02:00.",
        "range": "Out of range: give a time between the years 1 and 9999 in UTC.",
    }

    def to_python(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(force_str(value).strip())
            except ValueError:
                parsed = None  # e.g. month 13: the field reports "Enter a valid date/time."
            if parsed is not None and parsed.tzinfo is None:
                raise forms.ValidationError(self.error_messages["naive"], code="naive")
        result = super().to_python(value)
        try:
            return result.astimezone(UTC) if result is not None else None
        except OverflowError:
            raise forms.ValidationError(self.error_messages["range"], code="range") from None


class AwareIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = AwareIsoDateTimeField


class IntegerFilter(django_filters.NumberFilter):
    """A whole number: NumberFilter takes 0.5 and the integer column compares it truncated."""

    field_class = forms.IntegerField


def boolean_filter(**kwargs) -> django_filters.TypedChoiceFilter:
    """true/false (or 1/0); anything else is a 400, where BooleanFilter ignores it and lists all."""
    return django_filters.TypedChoiceFilter(
        choices=[(key, key) for key in _BOOLEANS], coerce=_BOOLEANS.__getitem__, **kwargs
    )
