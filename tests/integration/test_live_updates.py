"""Live updates across processes: a real daphne serving the WebSocket and a real Celery worker
changing state, with the embedded defaults (filesystem broker, in-process channel layer: daphne
tails the event table) and with Redis (broker and channels_redis). A state change made inside
the worker reaches an open socket within 1 second, and the page's state after the events
equals a fresh snapshot served by daphne.

The WebSocket client is a small asyncio one written here (RFC 6455, text frames only): the
project installs no WebSocket client library.
"""
import asyncio
import base64
import json
import os
import struct
import sys
import time
import urllib.request

import pytest
import redis
from celery import Celery
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from gogh_web.celery_config import EMBEDDED_BROKER, broker_config
from gogh_web.events.models import Event
from scheduler import services
from telemetry.models import Gpu, Node
from tests.unit.gogh_web.events.conftest import apply_events

from .conftest import REDIS_URL, free_port, wait_for_http, worker_argv

pytestmark = pytest.mark.django_db(transaction=True)
LATENCY_LIMIT_S = 1.0


class Socket:
    """A WebSocket client connection: connect(), receive() -> parsed JSON, close_code()."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int, path: str, cookie: str) -> "Socket":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"
             f"Cookie: {cookie}\r\n\r\n").encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 101"), head
        return cls(reader, writer)

    async def frame(self) -> tuple[int, bytes]:
        first, second = await self.reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        return first & 0x0F, await self.reader.readexactly(length)

    async def receive(self, timeout: float) -> dict:
        while True:
            opcode, payload = await asyncio.wait_for(self.frame(), timeout)
            if opcode == 0x1:
                return json.loads(payload)
            if opcode == 0x8:
                raise ConnectionError(f"closed with {struct.unpack('!H', payload[:2])[0] if payload else None}")
            if opcode == 0x9:  # ping -> pong, masked as a client must
                mask = os.urandom(4)
                self.writer.write(
                    bytes([0x8A, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                )

    async def close_code(self, timeout: float = 10) -> int:
        opcode, payload = await asyncio.wait_for(self.frame(), timeout)
        assert opcode == 0x8, (opcode, payload)
        return struct.unpack("!H", payload[:2])[0]

    def close(self):
        self.writer.close()


@pytest.fixture(params=["embedded", "redis"])
def stack(request, spawn):
    """daphne and a Celery worker sharing the test database and a channel layer: the embedded
    one (no REDIS_URL) or channels_redis; a Celery client for the worker's broker."""
    env = {"DJANGO_SECRET_KEY": settings.SECRET_KEY}  # daphne must read the sessions the test signs
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
        env.update(CELERY_BROKER_URL=REDIS_URL, REDIS_URL=REDIS_URL)
        config = broker_config(REDIS_URL, spawn.var)
    else:
        config = broker_config(EMBEDDED_BROKER, spawn.var)
    port = free_port()
    web, web_log = spawn("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                    "gogh_web.asgi:application"], **env)
    worker, worker_log = spawn("worker", worker_argv(f"live-{request.param}"), **env)
    wait_for_http(f"http://127.0.0.1:{port}/", web, web_log)
    client = Celery("test-client")
    client.conf.update(config, task_serializer="json", accept_content=["json"], result_serializer="json")
    client.port, client.layer, client.logs = port, request.param, (web_log, worker_log)
    yield client
    client.close()


def _snapshot(port: int, token: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/live/snapshot/", headers={"Authorization": f"Token {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _newest_event_id() -> int:
    """Read from a helper thread, whose connection is closed so the test database can be dropped."""
    try:
        return Event.objects.order_by("-id").values_list("id", flat=True).first()
    finally:
        connection.close()


def test_a_change_made_in_a_worker_reaches_an_open_socket_within_a_second(stack, alice, v100, resnet50, monkeypatch):
    monkeypatch.setattr(services, "scheduling_round_request", lambda **kwargs: None)  # the test sends the round
    monkeypatch.setattr(services, "_send_prediction", lambda job_id: None)
    node = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    Gpu.objects.create(node=node, index=0, uuid="GPU-v0", gpu_type=v100)
    Measurement.objects.create(
        workload=resnet50, gpu_type=v100, throughput=10.0, source="reference", observed_at=timezone.now()
    )
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1).job
    token = Token.objects.create(user=alice).key
    browser = Client()
    browser.force_login(alice)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    start = _snapshot(stack.port, token)
    assert start["state"]["job"][str(job.pk)]["state"] == "pending"

    async def follow():
        socket = await Socket.connect(stack.port, f"/ws/live/?after={start['event_id']}", cookie)
        await asyncio.sleep(0.5)  # subscribed before the change is made
        result = await asyncio.to_thread(
            stack.send_task, "scheduler.tasks.scheduling_round", kwargs={"trigger": "manual"}
        )
        received, arrival = [], {}
        while not any(e.get("kind") == "job" and e["data"] and e["data"]["state"] == "placed" for e in received):
            received.append(await socket.receive(timeout=60))
            arrival[received[-1]["id"]] = time.time()
        await asyncio.to_thread(result.get, timeout=60)
        newest = await asyncio.to_thread(_newest_event_id)
        while received[-1]["id"] < newest:  # the rest of the round's events
            received.append(await socket.receive(timeout=10))
        socket.close()
        anonymous = await Socket.connect(stack.port, "/ws/live/", "")
        return received, arrival, await anonymous.close_code()

    try:
        received, arrival, anonymous_code = asyncio.run(follow())
    except Exception as exc:  # show what the processes said, whatever went wrong
        pytest.fail(f"{stack.layer}: {exc!r}\n" + "\n".join(log.read_text()[-3000:] for log in stack.logs))

    placed = next(e for e in received if e["kind"] == "job" and e["data"]["state"] == "placed")
    event = Event.objects.get(pk=placed["id"])
    latency = arrival[placed["id"]] - event.created_at.timestamp()
    job.refresh_from_db()
    since_decision = arrival[placed["id"]] - job.placed_at.timestamp()
    print(f"[{stack.layer}] event stored by the worker -> socket: {latency * 1000:.0f} ms; "
          f"round's decision time -> socket: {since_decision * 1000:.0f} ms")
    assert latency <= LATENCY_LIMIT_S
    assert placed == event.as_message() and placed["data"]["placement"]["gpu_type"] == "v100"
    assert [e["id"] for e in received] == sorted(e["id"] for e in received)
    assert {"solve_run", "job"} <= {e["kind"] for e in received}
    assert apply_events(start["state"], received) == _snapshot(stack.port, token)["state"]
    assert anonymous_code == 4401


# live.js's reconnection rules, run in Debian's Chromium against stand-ins for the socket,
# fetch and the timers, so each close code and each delay can be played exactly.
LIVE_JS_HARNESS = """async (source) => {
  const timers = [], sockets = [], statuses = [];
  let fetches = 0;
  window.setTimeout = (fn, ms) => timers.push({fn, ms, cancelled: false});
  window.clearTimeout = (id) => { if (timers[id - 1]) timers[id - 1].cancelled = true; };
  window.fetch = () => {
    fetches += 1;
    return Promise.resolve({status: 200, ok: true, json: () => ({event_id: 5, state: {}})});
  };
  window.WebSocket = function (url) { this.url = url; sockets.push(this); };
  window.WebSocket.prototype.close = function () {};
  const settle = async () => { for (let i = 0; i < 10; i++) await null; };
  const socket = () => sockets[sockets.length - 1];
  const reconnect = async () => {  // run the reconnection timer; its delay
    const timer = timers.filter((t) => !t.cancelled && t.ms < 5000).pop();
    timer.cancelled = true; timer.fn(); await settle(); return timer.ms;
  };
  eval(source);
  GoghLive.connect({onStatus: (s) => statuses.push(s)});
  await settle();
  const delays = [];
  for (let i = 0; i < 4; i++) {  // accepted, then closed by a server error at once
    socket().onopen(); socket().onclose({code: 1011}); delays.push(await reconnect());
  }
  socket().onopen();
  socket().onmessage({data: JSON.stringify({id: 6, kind: "node", key: "1", op: "upsert", data: {}})});
  socket().onclose({code: 1006}); delays.push(await reconnect());  // a working socket dropped
  const before = fetches;
  socket().onopen(); socket().onclose({code: 4400}); await reconnect();
  const refetched = fetches - before;
  const opened = sockets.length;
  socket().onopen(); socket().onclose({code: 4401});
  return {delays, refetched, url: socket().url, signedOut: statuses[statuses.length - 1],
          stopped: sockets.length === opened && timers.every((t) => t.cancelled || t.ms === 5000)};
}"""


def test_live_js_backs_off_until_a_socket_proves_healthy_and_stops_when_signed_out():
    from playwright.sync_api import sync_playwright

    chromium = "/usr/bin/chromium"
    source = (settings.BASE_DIR / "static" / "js" / "live.js").read_text()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            result = browser.new_page().evaluate(LIVE_JS_HARNESS, source)
        finally:
            browser.close()
    assert result["delays"] == [500, 1000, 2000, 4000, 500]  # an accept alone resets nothing
    assert result["refetched"] == 1  # 4400: the id was refused, start again from a snapshot
    assert result["url"].endswith("?after=5")
    assert result["signedOut"] == "signed-out" and result["stopped"]
