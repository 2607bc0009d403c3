"""The broker goes away under a stream of submissions and comes back: a real daphne, Celery
worker and beat on a private Redis (started here on a free port, stopped for 30 s, started
again: never the shared one). Every submission is answered 201 and is one job (no 500 that a
client without Idempotency-Key would retry into a duplicate), and every job gets its P1
prediction exactly once: what could not be sent waited in the outbox for the drain.

And on the embedded broker, where a task a worker has taken is gone for good when the worker
is killed with SIGKILL, the outbox sends it again."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import PredictionRecord
from catalog.services.predictors import predictor_train
from gogh_web.celery import app
from gogh_web.celery_config import EMBEDDED_BROKER, broker_config
from gogh_web.outbox.models import OutboxMessage
from gogh_web.outbox.services import outbox_drain
from scheduler import services
from scheduler.models import Job, SolveRun
from telemetry.models import Gpu, Node
from tests.unit.catalog.predictors.conftest import TINY
from tests.unit.catalog.predictors.db_slice import load_slice

from .conftest import free_port, wait_for_http, worker_argv
from .test_full_loop import wait_for
from .test_http_api import call

pytestmark = pytest.mark.django_db(transaction=True)
OUTAGE_S = 30


class PrivateRedis:
    """A redis-server of this test's own, persisting to its folder so a stop loses nothing."""

    def __init__(self, spawn, folder):
        self.spawn, self.folder, self.port, self.proc = spawn, folder, free_port(), None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.proc, log = self.spawn("redis", ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                              "--dir", str(self.folder), "--appendonly", "yes", "--save", ""])
        deadline = time.monotonic() + 20
        ping = ["redis-cli", "-p", str(self.port), "ping"]
        while subprocess.run(ping, capture_output=True, text=True).stdout.strip() != "PONG":
            assert self.proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def submit_until(base, token, workload, stop: threading.Event, answers: list):
    """POST jobs one after another until told to stop; (status, job id or body) of each, and
    (None, the error) for one not answered within call()'s 10 s."""
    while not stop.is_set():
        try:
            status, body = call(base, "/api/jobs/", token, {"workload": workload, "min_throughput": 1, "max_gpus": 1})
        except OSError as exc:
            answers.append((None, repr(exc)))
            continue
        answers.append((status, json.loads(body)["id"] if status == 201 else body[:300]))
        time.sleep(0.5)


def test_submissions_through_a_broker_outage_are_all_jobs_with_one_p1_each(spawn, alice, settings, tmp_path):
    settings.VAR_DIR = spawn.var  # the worker reads the predictor's weights from the var directory they share
    workloads, gpu_types = load_slice()
    predictor_train(architecture="feedforward", hyperparameters=TINY)
    node = Node.objects.create(hostname="idle", state="down")  # no node ready: P1 must not depend on rounds
    Gpu.objects.create(node=node, index=0, uuid="GPU-idle-0", gpu_type=gpu_types["v100"])
    redis = PrivateRedis(spawn, tmp_path)
    redis.start()
    env = {"CELERY_BROKER_URL": redis.url, "GOGH_OUTBOX_DRAIN_S": "2", "GOGH_ROUND_DEBOUNCE_S": "1",
           "GOGH_SCHEDULING_INTERVAL_S": "5", "GOGH_PREDICTIONS_RECONCILE_S": "5", "GOGH_OUTBOX_REDELIVER_S": "20"}
    _, worker_log = spawn("worker", worker_argv("outage"), **env)
    _, beat_log = spawn("beat", [sys.executable, "-m", "celery", "-A", "gogh_web", "beat", "-l", "INFO"], **env)
    port = free_port()
    daphne, daphne_log = spawn("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                          "gogh_web.asgi:application"], **env)
    base = f"http://127.0.0.1:{port}"
    wait_for_http(base + "/api/", daphne, daphne_log)
    logs = [daphne_log, worker_log, beat_log]

    answers, stop = [], threading.Event()
    stream = threading.Thread(target=submit_until, args=(base, Token.objects.create(user=alice).key,
                                                         "ResNet-18 (batch size 32)", stop, answers))
    stream.start()
    try:
        wait_for(lambda: PredictionRecord.objects.exists(), "P1 before the outage", logs)
        redis.stop()
        time.sleep(OUTAGE_S)
        during = len(answers)
        redis.start()
        time.sleep(5)
    finally:
        stop.set()
        stream.join()

    assert [a for a in answers if a[0] != 201] == []  # no 500 (nor anything else) for a committed job
    created = [job_id for _, job_id in answers]
    assert during > 10 and len(set(created)) == len(created)
    assert sorted(Job.objects.values_list("pk", flat=True)) == sorted(created)  # every 201 is a job, no others
    wait_for(lambda: set(PredictionRecord.objects.values_list("job_id", flat=True)) >= set(created),
             "P1 for every job, the ones submitted while the broker was away included", logs)
    per_job = list(PredictionRecord.objects.filter(job_id__in=created).values_list("job_id", flat=True))
    assert len(per_job) == len(created)  # computed once per job


def test_a_round_lost_with_a_killed_worker_is_sent_again(spawn, alice, resnet50, monkeypatch, settings):
    """The round request waits out its debounce inside the worker (taken off the filesystem
    queue at once); SIGKILL loses it. Unacknowledged, it is sent again after
    GOGH_OUTBOX_REDELIVER_S, and another worker runs it."""
    folders = broker_config(EMBEDDED_BROKER, spawn.var)["broker_transport_options"]
    connect = app.connection_for_write
    monkeypatch.setattr(app, "connection_for_write", lambda: connect(transport_options=folders))  # the workers' broker
    settings.GOGH_ROUND_DEBOUNCE_S = 3600  # the countdown the request is sent with
    first, first_log = spawn("worker-1", worker_argv("doomed"))
    wait_for(lambda: "ready." in first_log.read_text(), "the first worker", [first_log])
    services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1)
    queue = spawn.var / "celery" / "queue"
    wait_for(lambda: "scheduling_round[" in first_log.read_text() and not list(queue.glob("*.rounds.msg")),
             "the worker taking the round request", [first_log])
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert OutboxMessage.objects.filter(key=services.ROUND_KEY, sent_at__isnull=False).exists()
    assert not SolveRun.objects.exists()

    _, second_log = spawn("worker-2", worker_argv("heir"))
    outbox_drain(now=timezone.now() + timedelta(seconds=settings.GOGH_OUTBOX_REDELIVER_S + 1))
    wait_for(lambda: SolveRun.objects.filter(trigger="submit").exists(), "the round, run by the second worker",
             [first_log, second_log])
    # the round acknowledged its request, and P1 (sent again too if the first worker had not run it) its own
    wait_for(lambda: not OutboxMessage.objects.exists(), "every lost task acknowledged", [first_log, second_log])
