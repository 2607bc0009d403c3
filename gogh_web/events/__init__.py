"""Live updates: the event stream behind the dashboard (docs/live-updates.md).

Each app builds the events and snapshot part of its own kinds (`<app>/live.py`), and its
services call those helpers, which call `send_event` and its kin, when they change state; after
the transaction commits an `Event` row is stored and WebSocket consumers push it to the pages
that may see it. A page starts from a snapshot carrying the id of the newest event, then
applies the events after it, so the state it shows equals a fresh snapshot. This app carries,
stores, replays and serves events and imports no app.
"""
from .sending import send_event, send_events

__all__ = ["send_event", "send_events"]
