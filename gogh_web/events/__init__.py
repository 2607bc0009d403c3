"""Live updates: the event stream behind the dashboard (docs/live-updates.md).

Services call `send_event` (or the helpers in `emit`) when they change state; after the
transaction commits an `Event` row is stored and WebSocket consumers push it to the pages that
may see it. A page starts from a snapshot carrying the id of the newest event, then applies the
events after it, so the state it shows equals a fresh snapshot.
"""
from .sending import send_event, send_events

__all__ = ["send_event", "send_events"]
