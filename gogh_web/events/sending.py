"""send_event: the one way live events are emitted.

Called by services inside their transaction; nothing happens unless and until it commits
(a rollback emits nothing). After the commit the event's data is built, stored as Event rows
and the channel layer is told, all under a lock on the event table so that event ids follow
commit order and the last event of an object always carries its latest state: a consumer that
has sent event N never later meets an event below N, and a page that applies events in order
ends where a fresh snapshot is.

A failure after the commit (SQLite's "database is locked", a bug in a builder) would leave
pages silently behind, so it is retried once; when the retry fails too a RESYNC marker is
stored instead, and every socket whose page is behind it tells the page to start again from a
fresh snapshot. If even the marker cannot be stored, the process owes it and stores it first
with its next events.

Events of the same kind sent by several threads of one process at once (GPU samples: every
agent's upload is a request thread of its own) may be merged: `send_events_merged` hands its
keys to whichever thread is storing that kind's events, so a burst of uploads costs one locked
transaction per turn instead of one each. Each key's event is still built under the lock after
the change that asked for it committed, so the guarantees above hold for merged events too.

With Redis (REDIS_URL) every process notifies the consumers of every ASGI process through
channels_redis. The embedded in-process layer cannot cross processes, so there each ASGI
process tails the Event table instead (tail.py), which also catches a notification lost to a
Redis outage.
"""
import logging
import threading
from functools import partial
from typing import NamedTuple

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connection, transaction

from .state import DELETE, RESYNC, UPSERT

GROUP = "live"
WAKE = {"type": "live.wake"}
ATTEMPTS = 2  # the first try and one retry

logger = logging.getLogger(__name__)
_resync_owed = False  # this process lost events and could not store the marker yet


class Change(NamedTuple):
    """One object's new state as an event stores it: data None means it is gone (a delete)."""

    kind: str
    key: str
    data: dict | None
    tenant_id: int | None


def send_event(*, kind: str, key, data, op: str = UPSERT, tenant_id: int | None = None) -> None:
    """Emit an event once the current transaction commits (at once outside a transaction).

    `data` is the object's state dict, or a callable returning it, called after the commit under
    the event lock so it reads the committed truth; a callable that returns None (the object is
    gone or left its window) turns the event into a delete. `tenant_id` None: every signed-in
    user sees the event; else that tenant's members and staff. Failures are never raised: the
    state change already committed (see the module's docstring for what pages are told).
    """
    key = str(key)

    def build() -> list[Change]:
        return [Change(kind, key, None if op == DELETE else (data() if callable(data) else data), tenant_id)]

    send_changes(build)


def send_events(*, kind: str, keys, data, tenant_id: int | dict | None = None) -> None:
    """send_event for many objects of one kind at once: `data(keys)` returns {key: dict} built in
    one go after the commit, and a key it leaves out becomes a delete. One lock, one read, one
    insert, one notification however many objects. `tenant_id`: one for all the keys, or
    {key: tenant id} (the jobs of a round belong to several tenants)."""
    keys = [str(key) for key in keys]
    tenants = (
        {str(k): t for k, t in tenant_id.items()} if isinstance(tenant_id, dict) else dict.fromkeys(keys, tenant_id)
    )
    if keys:
        send_changes(partial(_build_many, kind, keys, data, tenants))


def send_events_merged(*, kind: str, keys, data) -> None:
    """send_events for cluster-wide objects whose events may be merged with other threads' of
    the same kind in this process (the module's docstring): after the commit the keys join the
    kind's pending set, and the call returns once an event of each was stored (or given up, as
    any event may be), by this thread or by the one storing when it came."""
    keys = {str(key) for key in keys}
    if keys:
        transaction.on_commit(partial(_merger(kind, data).send, keys))


class _Merger:
    """Group commit for one kind: the first thread in stores everything pending, in turns,
    while the others wait for the turn that covers their keys."""

    def __init__(self, kind: str, data):
        self.kind, self.data = kind, data
        self._pending: set[str] = set()
        self._guard = threading.Lock()  # the pending set and the turn counters
        self._storing = threading.Lock()  # one thread stores at a time
        self._asked = 0  # calls that added keys
        self._covered = 0  # calls whose keys a finished turn stored

    def send(self, keys: set[str]) -> None:
        with self._guard:
            self._pending |= keys
            self._asked += 1
            mine = self._asked
        with self._storing:
            with self._guard:
                if self._covered >= mine:
                    return  # an earlier turn took our keys after we added them
                keys, self._pending, upto = sorted(self._pending), set(), self._asked
            try:
                _store_and_notify(partial(_build_many, self.kind, keys, self.data, dict.fromkeys(keys)))
            finally:
                with self._guard:
                    self._covered = upto


_mergers: dict[str, _Merger] = {}
_mergers_guard = threading.Lock()


def _merger(kind: str, data) -> _Merger:
    with _mergers_guard:
        return _mergers.setdefault(kind, _Merger(kind, data))


def send_changes(build) -> None:
    """The primitive under both: `build()` returns the Changes to store, called after the commit
    under the event lock, inside the transaction that stores them (so it may also update what
    must move in step with the events: windows.py)."""
    transaction.on_commit(partial(_store_and_notify, build))


def _build_many(kind: str, keys: list[str], data, tenants: dict) -> list[Change]:
    found = data(keys)
    return [Change(kind, key, found.get(key), tenants.get(key)) for key in keys]


def _store_and_notify(build) -> None:
    global _resync_owed
    for attempt in range(1, ATTEMPTS + 1):
        try:
            _store(build, resync=_resync_owed)
        except Exception:  # committed already: never raise into the service
            logger.warning("Could not store live events (attempt %d of %d)", attempt, ATTEMPTS, exc_info=True)
            continue
        _resync_owed = False
        break
    else:
        try:
            _store(list, resync=True)
            _resync_owed = False
        except Exception:
            _resync_owed = True
            logger.exception("Live events were lost; pages will be told to resync with this process's next event")
    _notify()


def _store(build, *, resync: bool) -> None:
    """Store `build()`'s events in one locked transaction, after a RESYNC marker when one is due."""
    from .models import Event  # the app registry is ready by the time anything commits

    with transaction.atomic():
        _lock_events(Event._meta.db_table)
        events = [Event(kind=RESYNC, key="", op=UPSERT, data=None)] if resync else []
        events += [
            Event(
                kind=c.kind, key=c.key, op=UPSERT if c.data is not None else DELETE, tenant_id=c.tenant_id, data=c.data
            )
            for c in build()
        ]
        Event.objects.bulk_create(events)


def _lock_events(table: str) -> None:
    """Serialise event writers until commit. PostgreSQL: a table lock that conflicts with itself
    and with inserts. SQLite: the IMMEDIATE transaction (settings) already holds the write lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f'LOCK TABLE "{table}" IN SHARE ROW EXCLUSIVE MODE')


def _notify() -> None:
    layer = get_channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return  # the tailer of each ASGI process reads the table
    try:
        async_to_sync(layer.group_send)(GROUP, WAKE)
    except Exception:  # the row is stored; tailers pick it up within GOGH_LIVE_POLL_S
        logger.warning("Could not notify the channel layer of a live event", exc_info=True)
