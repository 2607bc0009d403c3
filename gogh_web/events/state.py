"""What every kind's state shares: the operations an event applies to a page's state, the
resync marker, and the conversions that keep each kind's dict valid JSON.

Each app builds the dicts of its own kinds (`<app>/live.py`), one function per kind turning
model instances into the plain dict that both the snapshot and the events carry, so a page's
state after applying events is comparable, key for key, with a fresh snapshot. They use these
helpers: datetimes become ISO 8601 strings and non-finite floats None, so every dict is valid
JSON for any database's JSON column. Pure Python (no Django import).
"""
import math

#: What an event does to state[kind][key]: set it to the event's data, or remove it.
UPSERT, DELETE = "upsert", "delete"
#: The kind of the marker stored when an event could not be: sockets tell their page to resync.
RESYNC = "resync"


def iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def number(value) -> float | None:
    """A float for JSON: None stays None, and so do NaN and infinities (PostgreSQL's jsonb refuses them)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def plain(value):
    """A model field's value as JSON: datetimes as ISO strings, non-finite floats as None."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, float):
        return number(value)
    return value
