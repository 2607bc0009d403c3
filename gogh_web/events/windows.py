"""Windows of the live state: a snapshot may hold only the newest members of a list (the app
that builds a kind decides which, in its live.py: the newest ended jobs, the newest solve runs),
and pages must stay inside the same windows by applying events, so whatever leaves a window
needs a delete event.

Which objects left cannot be worked out when a change is made (before its commit): two jobs
ending concurrently would both pick the same job to push out, and the other one leaving would
never be told. So the writer that stores the events (after the commit, under the event lock,
sending.py) diffs the window now against the window as pages were last told (an EventWindow
row, updated in the same transaction): every member that left gets a delete, every one that
entered without its own event (a larger setting) an upsert.

Runs inside the event-storing transaction only (a `send_changes` builder).
"""
from .models import EventWindow
from .sending import Change


def window_changes(name: str, *, kind: str, members: list[str], unknown, emitted, data, tenants=None) -> list[Change]:
    """Deletes (and upserts) for the members of window `name` that left (entered) it since pages
    were last told. `members`: the window's keys now; `unknown()`: a generous superset of them
    for a window never stored before (_diff); `emitted`: keys whose events the same batch
    already carries; `data(keys)`: {key: dict} of the entered members; `tenants(keys)`: {key:
    tenant id} of members seen by one tenant only (None: every member is cluster-wide)."""
    left, entered = _diff(name, members, unknown=unknown)
    entered -= set(emitted)
    owners = tenants(left | entered) if tenants else {}
    found = data(sorted(entered)) if entered else {}
    return [Change(kind, key, found.get(key), owners.get(key)) for key in _by_id(left | entered)]


def _diff(name: str, members: list[str], *, unknown) -> tuple[set[str], set[str]]:
    """(left, entered) of window `name` since it was last stored, and store `members` as its
    members now. Never stored before (a new database, an upgrade): what pages hold is unknown,
    so everything in `unknown()` (a generous superset) outside the window is deleted (deleting
    what a page does not hold changes nothing) and nothing is said to have entered."""
    row = EventWindow.objects.filter(name=name).first()
    now = set(members)
    if row is None:
        EventWindow.objects.create(name=name, keys=members)
        return set(unknown()) - now, set()
    before = set(row.keys)
    if before != now:
        row.keys = members
        row.save(update_fields=["keys"])
    return before - now, now - before


def _by_id(keys) -> list[str]:
    return sorted(keys, key=int)
