"""Overload: beyond the per-process bound a request is answered 503 with Retry-After and
nothing of it runs; under daphne (ASGI) it first waits for a slot, holding no thread and no
database connection (gogh_web/api/overload.py)."""
import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.db import connection
from django.test import AsyncClient
from django.utils import timezone
from rest_framework.authtoken.models import Token

from gogh_web.api import overload
from gogh_web.api.overload import WAITING_PER_SLOT, Gate
from telemetry.models import GpuSample
from telemetry.services import node_register

URL = "/api/telemetry/samples/"


@pytest.fixture
def node(agent, v100):
    node, _ = node_register(agent_user=agent, hostname="node1", labels={}, cell="", agent_version="1.0",
                            gpus=[{"index": 0, "uuid": "GPU-node1-0", "gpu_type": "v100"}])
    return node


def body():
    return {"samples": [{"gpu": "GPU-node1-0", "ts": (timezone.now() - timedelta(seconds=1)).isoformat(),
                         "power_w": 200.0}]}


@pytest.fixture
def full():
    """full(name, limit): take every slot of the process's gate; given back at teardown."""
    taken = []

    def take(name, limit):
        gate = overload.gate(name, limit)
        while gate.try_enter():
            taken.append(gate)
        return gate

    yield take
    for gate in taken:
        gate.leave()


def assert_overload_answer(response):
    assert response.status_code == 503
    retry_after = int(response["Retry-After"])
    base = round(settings.GOGH_OVERLOAD_RETRY_AFTER_S)
    assert base <= retry_after <= 2 * base
    assert "busy" in response.json()["detail"]


def test_an_upload_beyond_the_ingest_bound_is_answered_503_and_stores_nothing(client_for, agent, node, full):
    full("ingest", settings.GOGH_INGEST_CONCURRENCY)
    assert_overload_answer(client_for(agent).post(URL, body(), format="json"))
    assert not GpuSample.objects.exists()


def test_other_requests_still_pass_while_uploads_are_at_their_bound(client_for, agent, node, full):
    full("ingest", settings.GOGH_INGEST_CONCURRENCY)
    assert client_for(agent).post(f"/api/nodes/{node.pk}/heartbeat/", {}, format="json").status_code == 200


def test_any_request_beyond_the_web_bound_is_answered_503(client_for, agent, node, full):
    full("web", settings.GOGH_WEB_CONCURRENCY)
    assert_overload_answer(client_for(agent).post(f"/api/nodes/{node.pk}/heartbeat/", {}, format="json"))
    assert_overload_answer(client_for(agent).post(URL, body(), format="json"))
    assert not GpuSample.objects.exists()


def test_slots_are_given_back(client_for, agent, node):
    for _ in range(settings.GOGH_INGEST_CONCURRENCY + 2):
        assert client_for(agent).post(URL, body(), format="json").status_code == 201
    assert overload.gate("ingest", settings.GOGH_INGEST_CONCURRENCY).holders == 0
    assert overload.gate("web", settings.GOGH_WEB_CONCURRENCY).holders == 0


async def async_upload(token: str):
    """The upload as daphne serves it: through the ASGI handler."""
    return await AsyncClient().post(URL, body(), content_type="application/json",
                               headers={"Authorization": f"Token {token}"})


@pytest.fixture
def token(agent):
    return Token.objects.get_or_create(user=agent)[0].key


def test_under_asgi_an_upload_waits_for_a_slot_then_runs(token, node, full, settings):
    settings.GOGH_INGEST_QUEUE_WAIT_S = 600  # never reached: the slot is given back first
    gate = full("ingest", settings.GOGH_INGEST_CONCURRENCY)

    async def scenario():
        upload = asyncio.create_task(async_upload(token))
        while not gate._waiters:  # the request is queued, not served and not refused
            await asyncio.sleep(0.01)
        assert not upload.done()
        gate.leave()  # one slot comes free: the waiting upload gets it
        return await upload

    response = async_to_sync(scenario)()
    gate.try_enter()  # the fixture gives back every slot it took
    assert response.status_code == 201, response.content
    assert GpuSample.objects.count() == 1


def test_under_asgi_an_upload_that_waited_its_time_in_vain_is_answered_503(token, node, full, settings):
    settings.GOGH_INGEST_QUEUE_WAIT_S = 0.01
    gate = full("ingest", settings.GOGH_INGEST_CONCURRENCY)
    response = async_to_sync(async_upload)(token)
    assert_overload_answer(response)
    assert not GpuSample.objects.exists()
    assert not [w for w in gate._waiters if not w.done()]


def test_the_middleware_waits_in_the_event_loop_under_asgi():
    """Async in daphne's handler chain: a sync-only middleware below it would make it run in a
    request thread, where it could not wait without holding the thread."""
    built = []
    original = overload.OverloadMiddleware.__init__

    def spy(self, get_response):
        original(self, get_response)
        built.append(self)

    overload.OverloadMiddleware.__init__ = spy
    try:
        ASGIHandler()
    finally:
        overload.OverloadMiddleware.__init__ = original
    assert [m.is_async for m in built] == [True]


@pytest.mark.django_db(transaction=True)
def test_under_asgi_a_request_closes_its_database_connection_before_it_leaves(token, node):
    """Django's own close (at request_finished, after the response is sent) would come after the
    slot is given back; the test client does not even do that one."""
    connection.ensure_connection()
    assert async_to_sync(async_upload)(token).status_code == 201
    assert connection.connection is None  # the request's thread is this one under async_to_sync


def test_a_connection_inside_a_transaction_is_left_open(db):
    connection.ensure_connection()
    overload.close_request_connections()  # a test's transaction (the test client's requests)
    assert connection.connection is not None


def test_a_gate_hands_a_freed_slot_to_the_first_waiter():
    async def scenario():
        gate = Gate(1)
        assert gate.try_enter()
        first = asyncio.create_task(gate.enter(wait_s=600))
        second = asyncio.create_task(gate.enter(wait_s=600))
        while len(gate._waiters) < 2:
            await asyncio.sleep(0)
        gate.leave()
        assert await first is True and not second.done()
        gate.leave()
        assert await second is True
        gate.leave()
        return gate.holders

    assert asyncio.run(scenario()) == 0


def test_a_gate_turns_away_a_waiter_beyond_its_queue_and_one_that_waited_in_vain():
    async def scenario():
        gate = Gate(1)
        gate.try_enter()
        queued = [asyncio.create_task(gate.enter(wait_s=600)) for _ in range(WAITING_PER_SLOT)]
        while len(gate._waiters) < WAITING_PER_SLOT:
            await asyncio.sleep(0)
        refused_at_once = await gate.enter(wait_s=600)
        for task in queued:
            task.cancel()
        await asyncio.gather(*queued, return_exceptions=True)
        timed_out = await gate.enter(wait_s=0.01)
        gate.leave()
        return refused_at_once, timed_out, gate.holders, gate.try_enter()

    assert asyncio.run(scenario()) == (False, False, 0, True)


def test_the_bounds_come_from_the_settings(client_for, agent, node, full, settings):
    settings.GOGH_WEB_CONCURRENCY = 2
    gate = full("web", 2)
    assert gate.holders == 2
    assert_overload_answer(client_for(agent).post(f"/api/nodes/{node.pk}/heartbeat/", {}, format="json"))
    gate.leave()
    assert client_for(agent).post(f"/api/nodes/{node.pk}/heartbeat/", {}, format="json").status_code == 200
    gate.try_enter()  # the fixture gives back every slot it took
