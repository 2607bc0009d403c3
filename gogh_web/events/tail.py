"""The tailer: one asyncio task per ASGI process that watches the Event table and wakes the
process's open sockets when a new event is stored.

Needed with the embedded in-process channel layer, which cannot hear a Celery worker or
another process; with Redis it is the safety net for a lost notification, at a slower pace
(GOGH_LIVE_POLL_S). One cheap query (the newest id) per interval per process, whatever the
number of sockets.
"""
import asyncio
import logging

from channels.db import database_sync_to_async

from .selectors import newest_event_id

logger = logging.getLogger(__name__)


class Tailer:
    def __init__(self):
        self._sockets = set()
        self._task: asyncio.Task | None = None

    def add(self, socket, *, interval: float) -> None:
        """Start waking `socket` (an object with an async wake()); the first one starts the task."""
        self._sockets.add(socket)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._run(interval))

    def remove(self, socket) -> None:
        self._sockets.discard(socket)

    async def _run(self, interval: float) -> None:
        seen = None  # the first look wakes everyone: cheap, and nothing stored meanwhile is missed
        while self._sockets:
            try:
                newest = await database_sync_to_async(newest_event_id)()
            except Exception:  # a database hiccup must not end the tailing
                logger.warning("Could not read the newest live event", exc_info=True)
                newest = seen
            if newest != seen:
                for socket in list(self._sockets):
                    try:
                        await socket.wake()
                    except Exception:  # one broken socket must not starve the others
                        logger.warning("Could not send live events to a socket", exc_info=True)
            seen = newest
            await asyncio.sleep(interval)


tailer = Tailer()
