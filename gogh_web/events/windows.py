"""Windows of the live state: the snapshot holds only the newest GOGH_LIVE_ENDED_JOBS_KEPT ended
jobs and the newest GOGH_LIVE_SOLVE_RUNS_KEPT solve runs, and pages must stay inside the same
windows by applying events, so whatever leaves a window needs a delete event.

Which objects left cannot be worked out when a change is made (before its commit): two jobs
ending concurrently would both pick the same job to push out, and the other one leaving would
never be told. So the writer that stores the events (after the commit, under the event lock,
sending.py) diffs the window now against the window as pages were last told (an EventWindow
row, updated in the same transaction): every member that left gets a delete, every one that
entered without its own event (a larger setting) an upsert.

Runs inside the event-storing transaction only (a `send_changes` builder).
"""
from django.conf import settings

from . import selectors
from .models import EventWindow
from .sending import Change

ENDED_JOBS, SOLVE_RUNS = "ended_jobs", "solve_runs"


def ended_jobs_changes(*, emitted) -> list[Change]:
    """Deletes (and upserts) for the ended jobs that left (entered) the window since pages were
    last told; `emitted`: keys whose events the same batch already carries."""
    kept = settings.GOGH_LIVE_ENDED_JOBS_KEPT
    left, entered = _diff(
        ENDED_JOBS, selectors.newest_ended_job_ids(kept), unknown=lambda: selectors.newest_ended_job_ids(2 * kept + 1)
    )
    entered -= set(emitted)
    tenants = selectors.job_tenants(left | entered)
    data = selectors.jobs_data_by_key(sorted(entered)) if entered else {}
    return [Change("job", key, data.get(key), tenants.get(key)) for key in _by_id(left | entered)]


def solve_runs_changes(*, emitted) -> list[Change]:
    """Like ended_jobs_changes, for the newest solve runs."""
    kept = settings.GOGH_LIVE_SOLVE_RUNS_KEPT
    left, entered = _diff(
        SOLVE_RUNS, selectors.newest_solve_run_ids(kept), unknown=lambda: selectors.newest_solve_run_ids(2 * kept + 1)
    )
    entered -= set(emitted)
    data = selectors.solve_runs_data_by_key(sorted(entered)) if entered else {}
    return [Change("solve_run", key, data.get(key), None) for key in _by_id(left | entered)]


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
