"""Bounded work per web process: beyond it, 503 with Retry-After instead of a queue without end.

Under daphne every request runs its Django code in a thread of its own (asgiref gives each
request its own single-thread executor; ASGI_THREADS does not bound them), and each such thread
opens its own database connection. Unbounded, 125 agents uploading at once meant 125 threads
and connections: PostgreSQL's "too many clients" answered as 500s, and everything else
queued behind the GIL for seconds. So every request passes two gates before Django's work:

- the web gate: at most GOGH_WEB_CONCURRENCY requests of this process run at once (and so
  hold a database connection); the others wait, in the event loop and without a connection,
  at most GOGH_WEB_QUEUE_WAIT_S;
- the ingest gate, first, for sample uploads only (the bulk of the load, and the one that can
  wait): at most GOGH_INGEST_CONCURRENCY at once, waiting at most GOGH_INGEST_QUEUE_WAIT_S, so
  uploads never take every slot from heartbeats, job reports and pages.

A request that cannot get in within its wait (or finds too many waiting already) is answered
503 with Retry-After (GOGH_OVERLOAD_RETRY_AFTER_S to twice that, spread so that turned-away
agents do not come back together) and nothing of it runs: the agent keeps its samples and
sends them again after that delay. The request's database connection is closed before its slot
is given back, so connections per process stay at most the concurrency (plus the one of the
WebSocket consumers' shared thread).

It sits below WhiteNoise and the other sync-only middlewares: there Django runs it async
under daphne (a middleware that can do both takes the mode of what is below it), so it can
wait in the event loop; the request's thread, already made for the middlewares above, waits
with it. Threads are cheap; connections are what PostgreSQL runs out of. Served synchronously
(WSGI, Django's test client) a request does not wait: it gets in at once or is answered 503.
"""
import asyncio
import random
import threading
from collections import deque

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.db import connections
from django.http import JsonResponse
from django.urls import reverse

#: Requests that may wait for a slot, per slot: beyond that a burst is turned away at once.
WAITING_PER_SLOT = 8


class Gate:
    """At most `limit` holders at once; others may wait for a slot (async) up to a bound.

    Thread-safe counting; waiting is for asyncio code on one event loop (daphne's), where a
    leaving holder hands its slot straight to the first waiter."""

    def __init__(self, limit: int):
        self.limit = limit
        self.holders = 0
        self._waiters: deque[asyncio.Future] = deque()
        self._lock = threading.Lock()

    def try_enter(self) -> bool:
        with self._lock:
            if self.holders < self.limit:
                self.holders += 1
                return True
            return False

    async def enter(self, wait_s: float) -> bool:
        """True once in (call leave() after); False when it waited `wait_s` in vain or too many wait."""
        if self.try_enter():
            return True
        with self._lock:
            if len(self._waiters) >= self.limit * WAITING_PER_SLOT:
                return False
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), wait_s)
            return True
        except (TimeoutError, asyncio.CancelledError):
            with self._lock:
                handed = waiter.done()  # the slot came as time ran out: give it back
                if not handed:
                    waiter.cancel()
            if handed:
                self.leave()
            raise_if_cancelled()
            return False

    def leave(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the slot passes on; holders stays as it is
                    return
            self.holders -= 1


_gates: dict[tuple[str, int], Gate] = {}
_gates_guard = threading.Lock()


def gate(name: str, limit: int) -> Gate:
    """The process's gate `name` ("web", "ingest") of `limit` slots: one per process, whatever
    the number of handlers (Django's test clients build one per client)."""
    with _gates_guard:
        return _gates.setdefault((name, limit), Gate(limit))


def raise_if_cancelled() -> None:
    """Re-raise a cancellation (the client went away) rather than turning it into a 503."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class OverloadMiddleware:
    """The two gates (module docstring), in MIDDLEWARE below the sync-only middlewares."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.ingest_path = reverse("telemetry-samples")
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self._serve_async(request)
        entered = []
        try:
            for gate, _ in self._gates(request):
                if not gate.try_enter():
                    return overloaded()
                entered.append(gate)
            return self.get_response(request)
        finally:
            for gate in reversed(entered):
                gate.leave()

    async def _serve_async(self, request):
        entered = []
        try:
            for gate, wait_s in self._gates(request):
                if not await gate.enter(wait_s):
                    return overloaded()
                entered.append(gate)
            try:
                return await self.get_response(request)
            finally:
                await sync_to_async(close_request_connections)()
        finally:
            for gate in reversed(entered):
                gate.leave()

    def _gates(self, request) -> list[tuple[Gate, float]]:
        gates = [(gate("web", settings.GOGH_WEB_CONCURRENCY), settings.GOGH_WEB_QUEUE_WAIT_S)]
        if request.path == self.ingest_path:
            gates.insert(0, (gate("ingest", settings.GOGH_INGEST_CONCURRENCY), settings.GOGH_INGEST_QUEUE_WAIT_S))
        return gates


def close_request_connections() -> None:
    """Close this request thread's database connections now, before its slot is given back
    (Django would at request_finished, after the response is sent, outside the gate). A
    connection inside a transaction (a test's) is left alone."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


def overloaded() -> JsonResponse:
    """503 with a Retry-After between the setting and twice it (whole seconds)."""
    base = max(1, round(settings.GOGH_OVERLOAD_RETRY_AFTER_S))
    retry_after = random.randint(base, 2 * base)
    response = JsonResponse(
        {"detail": f"The control plane is busy; retry after {retry_after} s."}, status=503
    )
    response["Retry-After"] = str(retry_after)
    return response
