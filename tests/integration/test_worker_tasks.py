"""A task sent through each broker is executed by a real `celery worker` process, which reads
and writes the same database the control plane uses."""
from datetime import timedelta

import pytest
from django.utils import timezone

from telemetry.models import Node

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker_marks_silent_nodes_down(worker):
    now = timezone.now()
    Node.objects.create(hostname="silent", last_heartbeat=now - timedelta(minutes=10))
    Node.objects.create(hostname="alive", last_heartbeat=now)

    result = worker.send_task("telemetry.tasks.nodes_mark_silent_down")
    try:
        went_down = result.get(timeout=60)
    except Exception as exc:  # show what the worker said, whatever went wrong
        pytest.fail(f"{worker.broker_name}: {exc!r}\n{worker.worker_log.read_text()}")

    assert went_down == 1
    assert Node.objects.get(hostname="silent").state == "down"
    assert "no heartbeat" in Node.objects.get(hostname="silent").state_reason
    assert Node.objects.get(hostname="alive").state == "ready"
    assert worker.worker_process.poll() is None, "the worker must still be running"


def test_failing_task_reports_its_error_without_killing_the_worker(worker):
    result = worker.send_task("telemetry.tasks.nodes_mark_silent_down", args=["unexpected"])
    with pytest.raises(TypeError):
        result.get(timeout=60)
    assert worker.worker_process.poll() is None
