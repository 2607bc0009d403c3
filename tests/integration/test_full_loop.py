"""The whole loop with real processes: a job submitted through the API is placed by a
scheduling round in a Celery worker, run by a simulated node agent as a subprocess, reported
back, and ends `succeeded`; its observed throughput lands in the catalog."""
import json
import time

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from scheduler.models import Job

from .conftest import approve_registered_node, simulated_agent_argv, worker_argv
from .test_http_api import call, daphne as daphne  # daphne: a fixture, `as` marks it re-exported

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(predicate, what, logs, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(
        f"{what} did not happen within {timeout} s:\n" + "\n".join(f"--- {p.name}\n{p.read_text()}" for p in logs)
    )


def test_submitted_job_runs_to_success(daphne, spawn, agent, alice, staff, v100, resnet50, tmp_path):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.4, source="reference",
                               observed_at=timezone.now())
    worker, worker_log = spawn("worker", worker_argv("loop"))
    _, agent_log = spawn("agent", simulated_agent_argv(daphne, "loop-node", tmp_path / "jobs", speedup=20),
                         GOGH_AGENT_TOKEN=Token.objects.create(user=agent).key)
    logs = [worker_log, agent_log]
    wait_for(lambda: v100.gpus.filter(node__hostname="loop-node").count() == 2, "the agent's registration", logs)
    approve_registered_node(daphne, "loop-node", staff, logs)

    token = Token.objects.create(user=alice).key
    status, body = call(daphne, "/api/jobs/", token,
                        {"workload": resnet50.name, "min_throughput": 2, "max_gpus": 1, "total_steps": 200})
    assert status == 201, body
    job_id = json.loads(body)["id"]

    wait_for(lambda: Job.objects.get(pk=job_id).state == "succeeded", "the job's success", logs)
    job = Job.objects.get(pk=job_id)
    assert job.steps_done == 200 and job.placed_at <= job.started_at <= job.finished_at
    (allocation,) = job.allocations.all()
    assert allocation.end == job.finished_at and allocation.gpu.node.hostname == "loop-node"
    # placed by the round its submission (or, within the debounce, the approval) asked for
    assert allocation.solve_run.trigger in {"submit", "node"} and allocation.solve_run.num_placed == 1
    assert Measurement.objects.filter(source="telemetry", workload=resnet50, gpu_type=v100).exists()
    status, detail = call(daphne, f"/api/jobs/{job_id}/", token)
    assert json.loads(detail)["state"] == "succeeded"
    assert worker.poll() is None
