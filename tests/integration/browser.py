"""What the browser tests share: the stack they drive (a real daphne with the Redis channel layer
and a real Celery worker on Redis), Debian's Chromium through Playwright (headless, no browser
download; a missing Chromium fails the run), the demo cluster and users, and the small steps the
tests take through the pages and the API. Screenshots go to GOGH_TEST_ARTIFACTS."""
import json
import os
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from gogh_web.celery_config import TASK_QUEUES
from gogh_web.dashboard.tradeoff import sweep_grid
from scheduler.models import Job
from telemetry.models import Gpu, GpuSample, Node

from .conftest import (
    REDIS_URL,
    Processes,
    free_port,
    process_env,
    test_database_url,
    wait_for_http,
    worker_argv,
)

CHROMIUM = Path(os.environ.get("GOGH_CHROMIUM", "/usr/bin/chromium"))
SIZES = {"wide": (1280, 800), "narrow": (390, 844)}
PAGES = {"cluster": "/dashboard/", "jobs": "/dashboard/jobs/", "predictions": "/dashboard/predictions/",
         "solver": "/dashboard/solver/", "tradeoff": "/dashboard/tradeoff/", "tenants": "/dashboard/tenants/",
         "services": "/dashboard/services/"}
# SwiftShader gives headless Chromium WebGL without a GPU (Plotly's 3D scatter needs it).
CHROMIUM_ARGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox"]
WAIT_MS = 30_000
PREVIEWS_PER_MINUTE = 2  # the daphne's preview throttle: the trade-off test runs into it


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    """daphne (channel layer and broker on Redis) and a Celery worker on Redis, for the module."""
    redis.Redis.from_url(REDIS_URL).flushdb()
    var = tmp_path_factory.mktemp("dashboard-var")
    with django_db_blocker.unblock():
        database_url = test_database_url()
    start = Processes(var, process_env(var, database_url, REDIS_URL=REDIS_URL, CELERY_BROKER_URL=REDIS_URL,
                                       GOGH_ROUND_DEBOUNCE_S="0.5",
                                       GOGH_DASHBOARD_PREVIEW_RATE=f"{PREVIEWS_PER_MINUTE}/min"))
    collect, _ = start("collectstatic", [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"])
    assert collect.wait(timeout=180) == 0
    start("worker", worker_argv("dashboard"))
    port = free_port()
    daphne, log = start("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                   "gogh_web.asgi:application"])
    base = f"http://127.0.0.1:{port}"
    wait_for_http(base + "/", daphne, log)
    yield base, var
    start.stop()


@pytest.fixture(autouse=True)
def quiet_database(transactional_db):
    """The module's worker outlives each test, and a test's teardown empties the database
    with TRUNCATE: a worker task still inside a transaction (the P1 prediction or the round
    after the last submission) then deadlocks with it on PostgreSQL (seen in CI). Before that
    teardown (this fixture's runs first), wait until the worker holds no task (none queued,
    none waiting out its debounce, none running: Redis keeps a reserved message in `unacked`
    until the late acknowledgement) and no other session of the test database is inside a
    statement or a transaction, both for half a second. The debounced round alone is not
    enough to watch for: it sits in the worker, not in the database, for GOGH_ROUND_DEBOUNCE_S
    (CI once saw the flush deadlock with a round that started after half a second of quiet)."""
    yield
    if connection.vendor != "postgresql":
        return  # SQLite: one writer at a time, no TRUNCATE
    broker = redis.Redis.from_url(REDIS_URL)
    quiet_since, busy, deadline = None, [], time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = worker_busy(broker) + database_busy()
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.5:
            return
        time.sleep(0.1)
    pytest.fail(f"the worker or the database stayed busy for 60 s after the test: {busy}")


def worker_busy(broker) -> list[str]:
    """What the Celery worker still holds on Redis: queued messages, and reserved ones (those
    waiting for their countdown and those running) that are not yet acknowledged."""
    busy = [f"{queue}: {n} queued" for queue in TASK_QUEUES if (n := broker.llen(queue))]
    if unacked := broker.hlen("unacked"):
        busy.append(f"{unacked} reserved")
    return busy


def database_busy() -> list[str]:
    """Other sessions of the test database inside a statement or a transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
        )
        sessions = cursor.fetchone()[0]
    return [f"{sessions} database sessions"] if sessions else []


@pytest.fixture(scope="module")
def chromium():
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}; install Debian's package (`make services` does).")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread while it runs; the tests' own
    # ORM calls (and the database flush after each test) are still plain synchronous code.
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if before is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def demo(v100, resnet50, make_user):
    """Two V100s with ResNet-50 measured on one and two of them; a user and a staff member
    whose passwords daphne can check (its default hasher)."""
    node = Node.objects.create(hostname="gpu-a", approved_at=timezone.now())
    for i in range(2):
        gpu = Gpu.objects.create(node=node, index=i, uuid=f"GPU-a{i}", gpu_type=v100)
        GpuSample.objects.create(gpu=gpu, ts=timezone.now(), power_w=60.0 + 150 * i, utilization=0.1 + 0.8 * i)
    for k, throughput in ((1, 4.0), (2, 7.5)):
        Measurement.objects.create(workload=resnet50, gpu_type=v100, num_gpus=k, throughput=throughput, power_w=250,
                                   utilization=0.9, source="reference", observed_at=timezone.now())
    users = {
        "alice": make_user("alice", tenant="research"),
        "operator": make_user("operator", tenant="ops", staff=True),
    }
    for name, user in users.items():
        user.password = PBKDF2PasswordHasher().encode("pw-" + name, "dashboardsalt", iterations=1000)
        user.save()
    return users


def signed_in(chromium, base, username, size="wide"):
    width, height = SIZES[size]
    page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
    page.errors = []  # uncaught script errors, checked by the tests
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(base + "/dashboard/jobs/")
    assert "/accounts/login/" in page.url  # sign-in is required
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-" + username)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/dashboard/jobs/")
    return page


def off_the_loop(write):
    """Run a write that emits live events in another thread: the channel layer's sync wrapper
    refuses the thread where Playwright's event loop runs."""

    def run():
        try:
            return write()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result(timeout=60)


def cancel(base, user, job_id):
    request = urllib.request.Request(base + f"/api/jobs/{job_id}/cancel/", data=b"{}", method="POST", headers={
        "Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def submit_job(base, user, **fields):
    body = json.dumps({"workload": "ResNet-50 (batch size 64)", "min_throughput": 3, "max_gpus": 2, **fields}).encode()
    request = urllib.request.Request(base + "/api/jobs/", data=body, method="POST", headers={
        "Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
        return json.loads(response.read())["id"]


def placed_past_the_cool_down(job_id):
    """Wait for the stack's round to place the job, then date its placement an hour back: a job
    placed less than move_cooldown_s ago is pinned where it is (scheduler.optimizer.keep_work),
    so a trade-off preview would not move it either."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while not Job.objects.filter(pk=job_id, state="placed").exists():
        assert time.monotonic() < deadline, f"job {job_id} was not placed"
        time.sleep(0.2)
    Job.objects.filter(pk=job_id).update(placed_at=timezone.now() - timedelta(hours=1))


def sweep_rendered(page):
    """Wait for the page to draw a complete sweep; when it does not, say where the page stood
    (its sweep, status, loads and status line), which a bare timeout would not."""
    try:
        page.wait_for_function(
            "n => { const p = document.getElementById('tradeoff-plot');"
            " return p && p.dataset.complete === 'true' && p.data && p.data[0].x.length === n; }",
            arg=len(sweep_grid()), timeout=WAIT_MS,
        )
    except PlaywrightTimeoutError:
        state = page.evaluate(
            "() => ({...document.getElementById('tradeoff-plot').dataset,"
            " line: document.getElementById('sweep-status').textContent})"
        )
        pytest.fail(f"no complete sweep drawn within {WAIT_MS} ms; the page: {state}")
