"""Poison strings sent to a real daphne process as raw bytes, as a hostile client would: a lone
surrogate in an environment name (before: stored on SQLite and every later list answered 500;
a 500 on PostgreSQL), a NUL in the workload (a 500 on PostgreSQL) and in a path. Each is a 400
naming where it is, nothing is stored, and the tenant's list keeps answering 200."""
import json
import sys
import urllib.request

import pytest
from rest_framework.authtoken.models import Token

from scheduler.models import Job
from telemetry.models import Gpu, Node

from .conftest import free_port, wait_for_http

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def daphne(spawn):
    port = free_port()
    proc, log = spawn(
        "daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "gogh_web.asgi:application"]
    )
    base = f"http://127.0.0.1:{port}"
    wait_for_http(base + "/", proc, log)
    return base


def send(base, path, token, raw: bytes | None = None):
    """GET, or POST the raw JSON bytes (the escapes travel as written)."""
    request = urllib.request.Request(base + path, data=raw, method="POST" if raw is not None else "GET")
    request.add_header("Authorization", f"Token {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_poison_strings_over_http_are_400s_and_the_list_keeps_working(daphne, alice, v100, resnet50):
    node = Node.objects.create(hostname="gpu-1")
    Gpu.objects.create(node=node, index=0, uuid="GPU-0", gpu_type=v100)
    token = Token.objects.create(user=alice).key
    job = '{"workload": "%s", "min_throughput": 5, "max_gpus": 1, "environment": {%s}}'

    status, body = send(daphne, "/api/jobs/", token, (job % (resnet50.name, '"K\\ud800": "v"')).encode())
    assert (status, body) == (400, {"environment.K\\ud800": [
        "The key contains a lone surrogate (U+D800), which is not a Unicode character."]})
    status, body = send(daphne, "/api/jobs/", token, (job % ("ResNet\\u0000", "")).encode())
    assert (status, body) == (400, {"workload": ["Contains a NUL character (U+0000), which text may not contain."]})
    status, body = send(daphne, "/api/gpu-types/v%00/", token)
    assert (status, body) == (
        400,
        {"path": ["The path contains a NUL character (U+0000), which text may not contain."]},
    )
    assert not Job.objects.exists()

    status, body = send(daphne, "/api/jobs/", token, (job % (resnet50.name, '"K": "v"')).encode())
    assert status == 201 and body["environment"] == {"K": None}
    status, listing = send(daphne, "/api/jobs/", token)
    assert status == 200 and [j["id"] for j in listing["results"]] == [body["id"]]
