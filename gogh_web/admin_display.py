"""How the admin shows computed numbers and long reasons. Display only: the stored values, and
the edit forms' inputs, keep every digit and every word.

A predicted throughput of `4.307990192432654` says nothing to its reader that `4.31` does not,
and a changelist column of pending reasons (a sentence each) made every row several lines tall.
"""
import math

from django.contrib import admin
from django.utils.html import format_html
from django.utils.text import capfirst

SIGNIFICANT = 3
REASON_CHARS = 60


def figures(value: float, significant: int = SIGNIFICANT) -> str:
    """`value` to `significant` significant figures, never dropping integer digits (1234.5 W
    shows as 1235, not 1.23e+03) and never switching to exponent notation."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def rounded(model, field: str):
    """An admin column or read-only field showing the float `field` of `model` by `figures`,
    labelled, sorted and styled (`field-<field>`) as the field itself, with its help text."""
    label = capfirst(model._meta.get_field(field).verbose_name)

    @admin.display(description=label, ordering=field)
    def show(obj):
        value = getattr(obj, field)
        return None if value is None else figures(value)

    show.__name__ = field
    return show


def clipped(text: str, limit: int = REASON_CHARS) -> str:
    """`text` cut at the last word boundary within `limit` characters, with an ellipsis, and the
    whole text in the title (shown on hover; the detail page shows it whole)."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else text[:limit]
    return format_html('<span title="{}">{}\u2026</span>', text, cut.rstrip(" ,.;:"))


class RecordAdmin(admin.ModelAdmin):
    """An admin for a record of what happened (a settings change, an interruption): listed and
    shown, never added, changed or deleted by hand, so it keeps saying what happened."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
