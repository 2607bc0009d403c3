"""send_event: the one function that emits live events.

Called by services inside their transaction; nothing happens unless and until it commits
(a rollback emits nothing). After the commit the event's data is built, stored as an Event row
and the channel layer is told, all under a lock on the event table so that event ids follow
commit order and the last event of an object always carries its latest state: a consumer that
has sent event N never later meets an event below N, and a page that applies events in order
ends where a fresh snapshot is.

With Redis (REDIS_URL) every process notifies the consumers of every ASGI process through
channels_redis. The embedded in-process layer cannot cross processes, so there each ASGI
process tails the Event table instead (tail.py), which also catches a notification lost to a
Redis outage.
"""
import logging
from functools import partial

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connection, transaction

UPSERT, DELETE = "upsert", "delete"
GROUP = "live"
WAKE = {"type": "live.wake"}

logger = logging.getLogger(__name__)


def send_event(*, kind: str, key, data, op: str = UPSERT, tenant_id: int | None = None) -> None:
    """Emit an event once the current transaction commits (at once outside a transaction).

    `data` is the object's state dict, or a callable returning it, called after the commit under
    the event lock so it reads the committed truth; a callable that returns None (the object is
    gone or left its window) turns the event into a delete. `tenant_id` None: every signed-in
    user sees the event; else that tenant's members and staff. Failures are logged, never raised:
    the state change already committed, and a page that reloads sees it.
    """
    key = str(key)

    def build() -> dict:
        return {key: None if op == DELETE else (data() if callable(data) else data)}

    transaction.on_commit(partial(_store_and_notify, kind, build, tenant_id), robust=True)


def send_events(*, kind: str, keys, data, tenant_id: int | None = None) -> None:
    """send_event for many objects of one kind at once: `data(keys)` returns {key: dict} built in
    one go after the commit, and a key it leaves out becomes a delete. One lock, one read, one
    insert, one notification however many objects (the GPUs of a sample batch)."""
    keys = [str(key) for key in keys]
    if keys:
        transaction.on_commit(partial(_store_and_notify, kind, partial(_build_many, keys, data), tenant_id), robust=True)


def _build_many(keys: list[str], data) -> dict:
    found = data(keys)
    return {key: found.get(key) for key in keys}


def _store_and_notify(kind: str, build, tenant_id: int | None) -> None:
    """Store the events of `build()` ({key: data, None meaning delete}) in one locked transaction."""
    from .models import Event  # the app registry is ready by the time anything commits

    with transaction.atomic():
        _lock_events(Event._meta.db_table)
        events = [
            Event(kind=kind, key=key, op=UPSERT if payload is not None else DELETE, tenant_id=tenant_id, data=payload)
            for key, payload in build().items()
        ]
        Event.objects.bulk_create(events)
    _notify()


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
    except Exception:  # noqa: BLE001  the row is stored; tailers pick it up within GOGH_LIVE_POLL_S
        logger.warning("Could not notify the channel layer of a live event", exc_info=True)
