"""The live WebSocket through the real ASGI stack (origin check, session auth, routing):
anonymous sockets are refused, a reconnecting page gets exactly the events it missed that it
may see, then new ones as they are stored; a page too far behind is told to resync."""
import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from gogh_web.asgi import application
from gogh_web.events import send_event
from gogh_web.events.models import Event
from scheduler.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)  # the consumer reads from other threads
ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def _cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


def _socket(path, user=None, origin=ORIGIN):
    headers = [origin] + ([_cookie(user)] if user else [])
    return WebsocketCommunicator(application, path, headers=headers)


async def _closed_with(socket) -> int:
    connected, _ = await socket.connect()
    assert connected
    while True:
        message = await socket.receive_output(timeout=5)
        if message["type"] == "websocket.close":
            return message["code"]


def test_anonymous_socket_is_closed_with_4401(db):
    assert async_to_sync(_closed_with)(_socket("/ws/live/?after=0")) == 4401


def test_socket_from_a_foreign_origin_is_refused(alice):
    socket = _socket("/ws/live/", alice, origin=(b"origin", b"https://evil.example"))

    async def attempt():
        connected, _ = await socket.connect()
        return connected

    assert async_to_sync(attempt)() is False


def test_bad_after_is_closed_with_4400(alice):
    assert async_to_sync(_closed_with)(_socket("/ws/live/?after=abc", alice)) == 4400


def test_reconnect_gets_exactly_the_missed_visible_events_then_live_ones(alice, bob):
    research, vision = Tenant.objects.get(slug="research"), Tenant.objects.get(slug="vision")
    send_event(kind="node", key=1, data={"n": 0})  # outside a transaction: stored at once
    seen = Event.objects.get().pk
    send_event(kind="job", key=10, data={"n": 1}, tenant_id=research.pk)
    send_event(kind="job", key=11, data={"n": 2}, tenant_id=vision.pk)  # not alice's
    send_event(kind="gpu", key=3, data={"n": 3})
    send_event(kind="job", key=10, op="delete", data=None, tenant_id=research.pk)

    socket = _socket(f"/ws/live/?after={seen}", alice)

    async def follow():
        assert (await socket.connect())[0]
        missed = [await socket.receive_json_from(timeout=5) for _ in range(3)]
        assert await socket.receive_nothing(timeout=0.5)
        await database_sync_to_async(send_event)(kind="node", key=2, data={"n": 4})
        live = await socket.receive_json_from(timeout=5)
        await socket.disconnect()
        return missed, live

    missed, live = async_to_sync(follow)()
    expected = [e.as_message() for e in Event.objects.filter(pk__gt=seen).exclude(key="11").order_by("id")]
    assert missed == expected[:3] and live == expected[3]
    assert [(m["kind"], m["key"], m["op"]) for m in missed] == [
        ("job", "10", "upsert"),
        ("gpu", "3", "upsert"),
        ("job", "10", "delete"),
    ]
    assert [m["id"] for m in missed] == sorted(m["id"] for m in missed)


def test_a_page_behind_the_retained_events_is_told_to_resync(alice):
    for key in range(3):
        send_event(kind="node", key=key, data={})
    Event.objects.filter(pk__lt=Event.objects.order_by("-id").first().pk).delete()  # pruned

    socket = _socket("/ws/live/?after=0", alice)

    async def behind():
        assert (await socket.connect())[0]
        message = await socket.receive_json_from(timeout=5)
        return message, await asyncio.wait_for(socket.receive_output(), 5)

    message, closing = async_to_sync(behind)()
    assert message == {"type": "resync"} and closing == {"type": "websocket.close", "code": 4409}


def _session_socket(user):
    """(client, socket): a socket opened with the client's session cookie."""
    client = Client()
    client.force_login(user)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    return client, WebsocketCommunicator(application, "/ws/live/", headers=[ORIGIN, cookie])


def _after_change(socket, change) -> list[dict]:
    """What the socket receives once `change` ran (in a thread, as a view would), up to its close."""

    async def follow():
        assert (await socket.connect())[0]
        assert await socket.receive_nothing(timeout=0.3)
        await database_sync_to_async(change)()
        received = []
        while not received or received[-1]["type"] != "websocket.close":
            received.append(await socket.receive_output(timeout=5))
        return received

    return async_to_sync(follow)()


def test_logging_out_closes_the_sessions_socket(alice):
    client, socket = _session_socket(alice)
    assert _after_change(socket, client.logout) == [{"type": "websocket.close", "code": 4401}]


def test_a_deactivated_users_socket_is_closed(alice):
    _, socket = _session_socket(alice)

    def deactivate():
        alice.is_active = False
        alice.save()

    assert _after_change(socket, deactivate)[-1] == {"type": "websocket.close", "code": 4401}


def test_a_user_moved_to_another_tenant_or_losing_staff_must_resync(alice, staff):
    from scheduler.models import Membership

    def move():
        Membership.objects.filter(user=alice).update(tenant=Tenant.objects.get(slug="ops"))
        Membership.objects.get(user=alice).save()  # what the admin does: a saved membership

    def demote():
        staff.is_staff = False
        staff.save()

    for user, change in [(alice, move), (staff, demote)]:
        _, socket = _session_socket(user)
        received = _after_change(socket, change)
        assert received[0]["text"] == '{"type": "resync"}'
        assert received[-1] == {"type": "websocket.close", "code": 4409}


def test_a_session_ended_elsewhere_gets_no_more_events(alice):
    from django.contrib.sessions.models import Session

    _, socket = _session_socket(alice)

    def end_session_then_emit():  # e.g. expired, or flushed by another process: no signal here
        Session.objects.all().delete()
        send_event(kind="node", key=1, data={"n": 1})

    assert _after_change(socket, end_session_then_emit) == [{"type": "websocket.close", "code": 4401}]


def test_a_resync_marker_tells_the_page_to_resync(alice):
    from gogh_web.events.models import Event

    _, socket = _session_socket(alice)

    def lose_events():
        Event.objects.create(kind="resync", key="", data=None)
        send_event(kind="node", key=1, data={"n": 1})

    received = _after_change(socket, lose_events)
    assert received[0]["text"] == '{"type": "resync"}' and received[-1] == {"type": "websocket.close", "code": 4409}
