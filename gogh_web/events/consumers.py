"""The live WebSocket: `ws(s)://HOST/ws/live/?after=N` (docs/live-updates.md).

Authenticated by the session cookie (AuthMiddlewareStack; anonymous sockets are closed with
4401), scoped like the snapshot (selectors.Viewer). It sends every visible event after N in id
order, then each new one as it is stored. Access is checked again on every wake: a session
that no longer signs the user in closes the socket with 4401, a changed scope (staff, tenant)
or a lost event (a RESYNC marker) tells the page to resync; signals.py wakes the sockets of a
user who logs out or whose account or tenant changes. Wake-ups come from the channel layer (Redis) and from
the process's tailer; both only say "look", and the consumer reads the table from the last id it
sent, under a lock, so nothing is sent twice or out of order, and a lost wake-up costs latency,
not events.
"""
import asyncio
import json
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from . import selectors, state
from .sending import GROUP
from .signals import user_group
from .tail import tailer

UNAUTHENTICATED, BAD_REQUEST, RESYNC = 4401, 4400, 4409
BATCH = 500


def parse_after(query_string: bytes) -> int | None:
    """The `after` parameter: an event id >= 0, or None when absent; ValueError otherwise."""
    values = parse_qs(query_string.decode("latin1")).get("after")
    if not values:
        return None
    after = int(values[0])
    if after < 0:
        raise ValueError(f"after must be >= 0, not {after}")
    return after


class LiveConsumer(AsyncWebsocketConsumer):
    viewer = None
    ended = False

    async def connect(self):
        await self.accept()  # a close code can only be sent on an accepted socket
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        try:
            after = parse_after(self.scope.get("query_string", b""))
        except ValueError:
            await self.close(code=BAD_REQUEST)
            return
        if after is None:
            after = await database_sync_to_async(selectors.newest_event_id)()
        elif await database_sync_to_async(selectors.needs_resync)(after):
            await self.send(text_data=json.dumps({"type": "resync"}))
            await self.close(code=RESYNC)
            return
        self.session_key = self.scope["session"].session_key
        self.user_group = user_group(user.pk)
        self.viewer = await database_sync_to_async(selectors.viewer_for)(user)
        self.last_id = after
        self.sending = asyncio.Lock()
        # Listen first, then send the backlog: an event stored in between wakes us again.
        await self.channel_layer.group_add(GROUP, self.channel_name)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        tailer.add(self, interval=settings.GOGH_LIVE_POLL_S)
        await self.wake()

    async def disconnect(self, code):
        await self._stop_listening()

    async def live_wake(self, message):
        await self.wake()

    async def live_recheck(self, message):
        """The user's account or tenant changed (signals.py)."""
        await self.wake()

    async def live_logout(self, message):
        """The user logged out of a session: this socket's ends now, the others check theirs."""
        if message.get("session_key") == self.session_key:
            async with self.sending:
                if not self.ended:
                    await self._end(UNAUTHENTICATED)
        else:
            await self.wake()

    async def wake(self):
        """Check that the session still grants what the socket was opened with, then send every
        visible event after the last one sent, in order."""
        async with self.sending:
            if self.ended:
                return
            viewer = await database_sync_to_async(selectors.session_viewer)(self.session_key)
            if viewer is None:
                await self._end(UNAUTHENTICATED)
                return
            if viewer != self.viewer:  # staff or tenant changed: the page must start again
                await self._end(RESYNC)
                return
            while True:
                events = await database_sync_to_async(selectors.events_after)(self.viewer, self.last_id, limit=BATCH)
                for event in events:
                    if event["kind"] == state.RESYNC:  # events were lost here (sending.py)
                        await self._end(RESYNC)
                        return
                    await self.send(text_data=json.dumps(event))
                    self.last_id = event["id"]
                if len(events) < BATCH:
                    return

    async def _end(self, code: int) -> None:
        self.ended = True
        await self._stop_listening()
        if code == RESYNC:
            await self.send(text_data=json.dumps({"type": "resync"}))
        await self.close(code=code)

    async def _stop_listening(self) -> None:
        if self.viewer is not None:
            tailer.remove(self)
            await self.channel_layer.group_discard(GROUP, self.channel_name)
            await self.channel_layer.group_discard(self.user_group, self.channel_name)
            self.viewer = None
