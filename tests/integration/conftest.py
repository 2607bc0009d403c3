"""Integration tier: real servers and real processes.

PostgreSQL (when DATABASE_URL names it) and Redis must be running (`make services`); a missing
server fails the run with the command that starts it, never a skip. Processes started here
(Celery workers, daphne, the whole stack) point at the test database through DATABASE_URL and
at their own var/ folder, and are stopped and reaped by the fixtures.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from celery import Celery
from django.conf import settings
from django.db import connection

from gogh_web.celery_config import EMBEDDED_BROKER, broker_config

ROOT = Path(settings.BASE_DIR)
REDIS_URL = os.environ.get("GOGH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Where the browser tests' screenshots go, kept by CI as the run's artifacts (.ci/run names it).
ARTIFACTS = Path(os.environ.get("GOGH_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts"))
BROKERS = ["embedded", "redis"]


@pytest.fixture(scope="session", autouse=True)
def servers_are_up():
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL} ({exc}); start it with `make services`.")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A browser test that fails leaves a screenshot of each page it opened,
    failed-<test>-<n>.png under ARTIFACTS: what the page showed is most of the diagnosis, and
    the tests' own screenshots are taken only on the way to a pass."""
    browser = item.funcargs.get("chromium")
    before = set(_open_pages(browser)) if browser else set()
    try:
        return (yield)
    except BaseException:
        if browser:
            _save_failure_screenshots(item, [page for page in _open_pages(browser) if page not in before])
        raise


def _open_pages(browser) -> list:
    return [page for context in browser.contexts for page in context.pages]


def _save_failure_screenshots(item, pages: list) -> None:
    from playwright.sync_api import Error as PlaywrightError

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "-", item.name).strip("-")
    for index, page in enumerate(pages):
        try:
            page.screenshot(path=str(ARTIFACTS / f"failed-{name}-{index}.png"), full_page=True)
        except PlaywrightError:  # a page closed or crashed: the test's own error says what happened
            continue


def test_database_url() -> str:
    """DATABASE_URL of the database pytest-django created, for processes we start."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@" if db["USER"] else ""
    return f"postgres://{auth}{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


test_database_url.__test__ = False  # a helper, not a test


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"process exited with {proc.returncode} before serving {url}:\n{log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{url} did not answer within {timeout} s:\n{log.read_text()}")


def worker_argv(name: str) -> list[str]:
    """A solo-pool `celery worker` named `name`@host, quiet about its peers."""
    return [sys.executable, "-m", "celery", "-A", "gogh_web", "worker", "--pool", "solo", "-l", "INFO",
            "-n", f"{name}@%h", "--without-gossip", "--without-mingle"]


def simulated_agent_argv(url: str, hostname: str, log_dir: Path, *, speedup: float) -> list[str]:
    """A node agent with two simulated V100s that polls, reports and uploads every second or so."""
    return [sys.executable, "-m", "telemetry.agent", "--simulate", "--gpus", "v100:2", "--url", url,
            "--hostname", hostname, "--poll-interval", "0.5", "--progress-interval", "1", "--upload-interval", "1",
            "--heartbeat-interval", "2", "--speedup", str(speedup), "--log-dir", str(log_dir)]


def approve_registered_node(base: str, hostname: str, staff, logs: list[Path], timeout: float = 90) -> None:
    """Wait for an agent to register `hostname`, then approve the node as an operator does
    (POST /api/nodes/{id}/approve/ on the server at `base`): a node that an agent registers
    receives no jobs until then."""
    from rest_framework.authtoken.models import Token

    from telemetry.models import Node

    deadline = time.monotonic() + timeout
    while not Node.objects.filter(hostname=hostname).exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{hostname} did not register within {timeout} s:\n" + "\n".join(p.read_text() for p in logs))
        time.sleep(0.3)
    request = urllib.request.Request(f"{base}/api/nodes/{Node.objects.get(hostname=hostname).pk}/approve/",
                                     data=b"{}", method="POST")
    request.add_header("Authorization", f"Token {Token.objects.get_or_create(user=staff)[0].key}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


class Processes:
    """Processes started with a shared environment and log folder; stop() sends each a SIGTERM,
    waits, then kills what is left (its whole session)."""

    def __init__(self, folder: Path, env: dict):
        self.folder, self.env, self.started = folder, env, []

    def __call__(self, name, argv, **extra_env):
        """-> (Popen, log path)."""
        log = self.folder / f"{name}.log"
        proc = subprocess.Popen(argv, cwd=ROOT, env={**self.env, **extra_env}, stdout=log.open("w"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append(proc)
        return proc, log

    def stop(self):
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.started:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def process_env(var: Path, database_url: str, **extra) -> dict:
    return {**os.environ, "DATABASE_URL": database_url, "GOGH_VAR_DIR": str(var), "PYTHONUNBUFFERED": "1", **extra}


@pytest.fixture
def spawn(tmp_path):
    """spawn(name, argv, **env) -> (Popen, log path); every process is stopped at teardown."""
    var = tmp_path / "var"
    var.mkdir()
    processes = Processes(tmp_path, process_env(var, test_database_url()))
    processes.var = var
    yield processes
    processes.stop()


@pytest.fixture(params=BROKERS)
def worker(request, spawn):
    """A real `celery worker` process on the embedded broker or on Redis, and a client app
    that sends it tasks and reads results the way any other process would."""
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
        config = broker_config(REDIS_URL, spawn.var)
        env = {"CELERY_BROKER_URL": REDIS_URL}
    else:
        config = broker_config(EMBEDDED_BROKER, spawn.var)
        env = {}
    proc, log = spawn("worker", worker_argv(f"test-{request.param}"), **env)
    client = Celery("test-client")
    client.conf.update(config, task_serializer="json", accept_content=["json"], result_serializer="json")
    client.worker_process, client.worker_log, client.broker_name = proc, log, request.param
    yield client
    client.close()
