"""A simulated node agent process against a real daphne: it registers, heartbeats, uploads
samples, runs a job allocated to it as a real subprocess at the power limit chosen for its GPU
until the job succeeds, puts the default limit back, and leaves on SIGTERM; /metrics shows its
GPUs."""
import signal
import sys
import time

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from scheduler.models import Allocation, Job
from scheduler.services import job_submit, job_transition
from telemetry.models import GpuSample, Node

from .conftest import approve_registered_node
from .test_http_api import call, daphne as daphne  # daphne: a fixture, `as` marks it re-exported

pytestmark = pytest.mark.django_db(transaction=True)


def wait_until(predicate, what, log, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    pytest.fail(f"{what} did not happen within {timeout} s; agent log:\n{log.read_text()}")


def test_a_simulated_agent_registers_reports_runs_a_job_and_leaves(daphne, spawn, agent, staff, alice, v100, resnet50,
                                                                   tmp_path):
    token = Token.objects.create(user=agent).key
    proc, log = spawn(
        "agent",
        [sys.executable, "manage.py", "run_agent", "--simulate", "--gpus", "v100:2", "--url", daphne,
         "--hostname", "sim-node-1", "--heartbeat-interval", "1", "--upload-interval", "1", "--poll-interval", "0.5",
         "--progress-interval", "1", "--speedup", "25", "--grace-period", "2", "--log-dir", str(tmp_path / "jobs")],
        GOGH_AGENT_TOKEN=token,
    )
    wait_until(lambda: Node.objects.filter(hostname="sim-node-1").exists(), "registration", log)
    node = Node.objects.get(hostname="sim-node-1")
    assert node.agent == agent and sorted(node.gpus.values_list("index", flat=True)) == [0, 1]
    assert node.approved_at is None  # an agent's new node waits for an operator
    approve_registered_node(daphne, "sim-node-1", staff, [log])
    assert set(node.gpus.values_list("gpu_type__name", flat=True)) == {"v100"}
    wait_until(lambda: GpuSample.objects.filter(gpu__node=node).count() >= 6, "sample uploads", log)
    idle = GpuSample.objects.filter(gpu__node=node).first()
    assert idle.power_w == pytest.approx(35, rel=0.2)  # the type's curve at utilization 0

    job = job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1, total_steps=150).job
    job = job_transition(job=job, to="placed")
    gpu = node.gpus.get(index=1)
    assert (gpu.power_limit_min_w, gpu.power_limit_default_w, gpu.power_limit_w) == (
        pytest.approx(0.4 * gpu.power_limit_max_w), gpu.power_limit_max_w, gpu.power_limit_max_w)
    Allocation.objects.create(job=job, gpu=gpu, start=timezone.now(), predicted_throughput=4.4 * 25, power_limit_w=150)
    wait_until(lambda: Job.objects.get(pk=job.pk).state == "succeeded", "the job's success", log)
    job.refresh_from_db()
    assert job.steps_done == 150 and job.started_at is not None
    observed = Measurement.objects.filter(source="telemetry", job_link__job=job)
    assert 1 <= observed.count() <= 2  # while running (at most once per interval) and at the end
    for measurement in observed:  # 4.39 steps/s x a per-workload factor around 1: the real-time
        # rate, though the simulated job ran 25 times faster (the catalog must learn the GPU's truth)
        assert measurement.gpu_type == v100 and 1.6 < measurement.throughput < 10
    assert (tmp_path / "jobs" / f"job-{job.pk}.out").read_text().count("GOGH_PROGRESS") >= 3
    busy = GpuSample.objects.filter(gpu=gpu, utilization__gt=0.5)
    assert busy.exists() and busy.first().power_w == 150  # the type's curve under load, held at the limit
    assert "power limits set: GPU 1 150 W" in log.read_text()
    wait_until(lambda: node.gpus.get(index=1).power_limit_w == gpu.power_limit_default_w, "the default limit back", log)

    staff_token = Token.objects.get_or_create(user=staff)[0].key  # made when it approved the node
    status, body = call(daphne, "/metrics", staff_token)
    assert status == 200 and b'gogh_gpu_power_watts{Hostname="sim-node-1"' in body

    node.refresh_from_db()
    assert node.state == "ready" and node.last_heartbeat is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()
    node.refresh_from_db()
    assert (node.state, node.state_reason) == ("down", "agent left (agent-node1)")
    assert "Traceback" not in log.read_text()
