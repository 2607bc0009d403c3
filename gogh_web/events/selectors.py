"""Reads of the live stream: who sees what, the snapshot, and the events after an id.

Each kind's part of the snapshot, and what its events carry, is built by the app that owns the
kind (`<app>/live.py`), named in settings.GOGH_LIVE_KINDS; so is the tenant a user belongs to
(settings.GOGH_LIVE_TENANT_OF). This app carries them and imports none.
"""
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib import auth
from django.db.models import Q
from django.utils.module_loading import import_string

from .models import Event


@dataclass(frozen=True)
class Viewer:
    """What a signed-in user may see of the stream: staff everything, others their tenant's
    events and the cluster-wide ones (the kinds' snapshot parts apply the same rule). Sockets
    compare it on every wake with the session's user now."""

    staff: bool
    tenant_id: int | None

    def events(self):
        events = Event.objects.all()
        if self.staff:
            return events
        cluster_wide = Q(tenant__isnull=True)
        return events.filter(cluster_wide | Q(tenant_id=self.tenant_id) if self.tenant_id else cluster_wide)


def viewer_for(user) -> Viewer:
    return Viewer(staff=bool(user.is_staff), tenant_id=import_string(settings.GOGH_LIVE_TENANT_OF)(user))


def session_viewer(session_key: str | None) -> Viewer | None:
    """What the user signed in to this session may see now; None when the session no longer
    signs anyone in (logged out, expired, password changed, user deactivated or deleted).
    Sockets ask on every wake: access is not fixed when they open."""
    if not session_key:
        return None
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(SimpleNamespace(session=session))  # what a request with that cookie gets
    return viewer_for(user) if user.is_authenticated else None


# --- Events


def newest_event_id() -> int:
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


def oldest_event_id() -> int | None:
    return Event.objects.order_by("id").values_list("id", flat=True).first()


def needs_resync(after: int) -> bool:
    """True when the events after `after` are no longer all kept (pruned), or `after` is from
    another database (ahead of the newest): the client must start again from a snapshot."""
    oldest = oldest_event_id()
    if oldest is None:
        return after > 0 and after > newest_event_id()
    return after < oldest - 1 or after > newest_event_id()


def events_after(viewer: Viewer, after: int, *, limit: int = 500) -> list[dict]:
    return [event.as_message() for event in viewer.events().filter(id__gt=after).order_by("id")[:limit]]


# --- Snapshot


def snapshot(viewer: Viewer) -> dict:
    """{"event_id": N, "state": {kind: {key: data}}}: what the viewer may see now, and the id of
    the newest event it already reflects. The id is read first: an event committed while the
    state is read is sent again after it, and applying it again changes nothing."""
    event_id = newest_event_id()
    return {
        "event_id": event_id,
        "state": {kind: import_string(part)(viewer) for kind, part in settings.GOGH_LIVE_KINDS.items()},
    }
