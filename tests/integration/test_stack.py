"""`manage.py run_stack` (what `make demo` ends with): daphne, worker and beat work together,
one SIGINT (Ctrl-C) stops all of them cleanly, and the console shows what happened, not
Celery's chatter."""
import os
import re
import signal
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from telemetry.models import Node

from .conftest import free_port, wait_for_http

pytestmark = pytest.mark.django_db(transaction=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stack_runs_beat_and_worker_and_stops_on_ctrl_c(spawn):
    Node.objects.create(hostname="silent", last_heartbeat=timezone.now() - timedelta(minutes=5))
    port = free_port()
    stack, log = spawn(
        "stack",
        [sys.executable, "manage.py", "run_stack", "--port", str(port), "--concurrency", "1"],
        GOGH_NODE_HEARTBEAT_TIMEOUT_S="1",
    )
    wait_for_http(f"http://127.0.0.1:{port}/", stack, log)

    deadline = time.monotonic() + 60  # beat fires every 5 s; the worker then marks it down
    while Node.objects.get(hostname="silent").state != "down":
        if time.monotonic() > deadline:
            pytest.fail("beat -> broker -> worker never marked the silent node down:\n" + log.read_text())
        time.sleep(0.5)

    children = [int(pid) for pid in re.findall(r"started \w+ \(pid (\d+)\)", log.read_text())]
    assert len(children) == 4  # daphne, the rounds worker, the other worker, beat
    stack.send_signal(signal.SIGINT)
    # Each child stops in turn within the supervisor's 15 s grace: a loaded machine may need most of it.
    assert stack.wait(timeout=len(children) * 15 + 30) == 0, log.read_text()
    assert "[stack] all stopped" in log.read_text()
    assert not [pid for pid in children if alive(pid)]

    shown = log.read_text()
    assert "INFO gogh.activity: node silent down: no heartbeat for 1 s" in shown
    for chatter in ("No hostname was supplied", "Sending due task", "] received", "] succeeded", "Not Found"):
        assert chatter not in shown, chatter
