"""Query-string filters stricter than django-filter's: a bad value is a 400, never a silently
different query or a 500."""
from datetime import UTC

import django_filters
from django import forms
from django.utils.dateparse import parse_datetime
from django.utils.encoding import force_str
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter

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


class StrictOrderingFilter(OrderingFilter):
    """`?ordering=` by the view's ordering fields only. DRF drops an unknown term silently and
    orders otherwise than asked (`?ordering=bogus` listed in the default order): here it is a
    400 naming the allowed orderings, as a bad filter value is."""

    def remove_invalid_fields(self, queryset, fields, view, request):
        allowed = [name for name, _ in self.get_valid_fields(queryset, view, {"request": request})]
        terms = [term for term in fields if term]  # "a,,b" and a trailing comma order as DRF does
        unknown = [term for term in terms if term.removeprefix("-") not in allowed]
        if unknown:
            raise ValidationError({self.ordering_param: [_unknown_ordering_message(unknown, allowed)]})
        return terms

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        fields = getattr(view, "ordering_fields", None)
        if isinstance(fields, list | tuple):
            parameters[0]["description"] = _allowed_orderings(fields)
        return parameters


def _allowed_orderings(allowed: list[str]) -> str:
    return f"Order by {', '.join(allowed)}; '-' first for descending (e.g. -{allowed[0]}), several comma-separated."


def _unknown_ordering_message(unknown: list[str], allowed: list[str]) -> str:
    shown = ", ".join(repr(term if len(term) <= 64 else term[:64] + "...") for term in unknown)
    return f"Cannot order by {shown}. {_allowed_orderings(allowed)}"
