"""The API served by a real daphne process: what a user with curl and a token does."""
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
    collect = spawn("collectstatic", [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"])[0]
    assert collect.wait(timeout=120) == 0
    port = free_port()
    proc, log = spawn(
        "daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "gogh_web.asgi:application"]
    )
    base = f"http://127.0.0.1:{port}"
    wait_for_http(base + "/", proc, log)
    return base


def call(base, path, token=None, body=None, headers=None):
    request = urllib.request.Request(base + path, method="POST" if body is not None else "GET")
    if token:
        request.add_header("Authorization", f"Token {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.data = json.dumps(body).encode()
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_submit_list_and_cancel_over_http(daphne, alice, v100, resnet50):
    node = Node.objects.create(hostname="gpu-1")
    Gpu.objects.create(node=node, index=0, uuid="GPU-0", gpu_type=v100)
    token = Token.objects.create(user=alice).key

    status, body = call(daphne, "/api/jobs/", token, {"workload": resnet50.name, "min_throughput": 5, "max_gpus": 1},
                        headers={"Idempotency-Key": "curl-1"})
    assert status == 201, body
    job = json.loads(body)
    assert job["state"] == "pending"
    status, again = call(daphne, "/api/jobs/", token, {"workload": resnet50.name, "min_throughput": 5, "max_gpus": 1},
                         headers={"Idempotency-Key": "curl-1"})
    assert json.loads(again)["id"] == job["id"]
    assert Job.objects.count() == 1

    status, listing = call(daphne, "/api/jobs/", token)
    assert status == 200 and [j["id"] for j in json.loads(listing)["results"]] == [job["id"]]
    status, bad = call(daphne, "/api/jobs/", token, {"workload": resnet50.name, "min_throughput": -1, "max_gpus": 1})
    assert status == 400 and "min_throughput" in json.loads(bad)
    status, cancelled = call(daphne, f"/api/jobs/{job['id']}/cancel/", token, {})
    assert status == 200 and json.loads(cancelled)["state"] == "cancelled"
    assert call(daphne, "/api/jobs/")[0] == 401


def test_pages_and_static_files_are_served_without_cdn(daphne, alice):
    status, landing = call(daphne, "/")
    assert status == 200 and b"/api/docs/" in landing and b"/admin/" in landing
    assert call(daphne, "/static/css/gogh.css")[0] == 200
    status, docs = call(daphne, "/api/docs/", Token.objects.create(user=alice).key)
    assert status == 200
    assert b"swagger-ui" in docs and b"cdn." not in docs and b"https://" not in docs
    assert call(daphne, "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")[0] == 200
    assert call(daphne, "/admin/login/")[0] == 200
