"""A real inference service under the job contract, end to end on the CPU: a node agent process
(simulated GPU, jobs' own commands) against a real daphne runs a service replica's command,
telemetry.agent.serve_model (a PyTorch model over loopback HTTP); the load generator sends it
Poisson traffic at a known rate; the replica's GOGH_TRAFFIC lines reach the control plane with
its progress reports, which stores them as ServiceTraffic samples and refreshes its Service.

The rows (the service, its replica placed on the node's GPU) are made directly, as a round would
leave them: no round runs here (no worker), so nothing moves the replica while it serves."""
import json
import statistics
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from scheduler.models import Allocation, Job, Service, ServiceTraffic
from scheduler.services import job_submit, job_transition
from telemetry.models import Node

from .conftest import ROOT, approve_registered_node, free_port
from .test_agent_loop import wait_until
from .test_http_api import daphne as daphne  # daphne: a fixture, `as` marks it re-exported

pytestmark = pytest.mark.django_db(transaction=True)

RATE_RPS = 30
LOAD_S = 12
WINDOW_S = 4  # the service's traffic window: samples taken once it lies wholly within the load


def test_a_service_replica_reports_its_traffic_through_its_agent(daphne, spawn, agent, staff, alice, v100, resnet50,
                                                                 tmp_path):
    _, log = spawn(
        "agent",
        [sys.executable, "manage.py", "run_agent", "--simulate", "--run-commands", "--speedup", "1", "--gpus", "v100:1",
         "--url", daphne, "--hostname", "serve-node", "--heartbeat-interval", "1", "--upload-interval", "1",
         "--poll-interval", "0.5", "--progress-interval", "1", "--grace-period", "5",
         "--log-dir", str(tmp_path / "jobs")],
        GOGH_AGENT_TOKEN=Token.objects.create(user=agent).key,
    )
    approve_registered_node(daphne, "serve-node", staff, [log])
    service = Service.objects.create(name="ranker", owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                     latency_bound_ms=200, batch_size=4)
    port = free_port()
    command = (f"{sys.executable} -m telemetry.agent.serve_model --batch-size 4 --hidden 64 --device cpu "
               f"--report-interval-s 1 --window-s {WINDOW_S}")
    job = job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1, command=command,
                     environment={"GOGH_SERVICE_PORT": str(port), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}).job
    Job.objects.filter(pk=job.pk).update(service=service)
    job_transition(job=job, to="placed")
    gpu = Node.objects.get(hostname="serve-node").gpus.get(index=0)
    Allocation.objects.create(job=job, gpu=gpu, start=timezone.now(), predicted_throughput=20)
    job_log = tmp_path / "jobs" / f"job-{job.pk}.out"
    wait_until(lambda: job_log.exists() and "serving on http://127.0.0.1:" in job_log.read_text(), "the service", log)

    started = timezone.now()
    load = subprocess.run(
        [sys.executable, "-m", "telemetry.agent.load_generator", "--url", f"http://127.0.0.1:{port}/predict",
         "--rate", str(RATE_RPS), "--duration-s", str(LOAD_S), "--seed", "7"],
        cwd=ROOT, capture_output=True, text=True, timeout=LOAD_S + 30,
    )
    ended = timezone.now()
    assert load.returncode == 0, load.stderr
    generated = json.loads(load.stdout)
    assert generated["answered"] == generated["sent"] and generated["p99_ms"] > 0
    service.refresh_from_db()
    assert service.request_rate_rps == pytest.approx(generated["rate_rps"], rel=0.3)
    assert service.p99_ms > 0

    # Reports whose window lies wholly within the load: the agent forwards a line within its
    # progress interval, and the service measured its window up to a report interval before.
    steady = ServiceTraffic.objects.filter(service=service, job=job,
                                           at__gte=started + timedelta(seconds=WINDOW_S + 2), at__lte=ended)
    rates = [sample.request_rate_rps for sample in steady]
    assert len(rates) >= 3, list(ServiceTraffic.objects.values_list("at", "request_rate_rps"))
    assert statistics.median(rates) == pytest.approx(generated["rate_rps"], rel=0.2), (rates, generated)
    assert all(sample.p99_ms > 0 for sample in steady)
    job.refresh_from_db()
    assert job.state == "running" and job.steps_done >= generated["sent"] / 4  # one step a batch of at most 4
    assert (job.service_id, job.total_steps) == (service.pk, None)

    Allocation.objects.filter(job=job).update(end=timezone.now())  # withdrawn: the agent stops the replica
    wait_until(lambda: "stopped after step" in job_log.read_text(), "the replica's stop", log)
    text = log.read_text()
    assert "Traceback" not in text and "traffic refused" not in text

