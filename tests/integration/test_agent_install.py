"""The agent as docs/agent.md installs it: exactly the documented files copied into an empty
folder, run there with nothing else on the path (`python -S`: no site-packages, so neither
Django nor the repository's other apps can be imported), against a real daphne. The simulated
node registers, uploads samples, runs a job to success and leaves on SIGTERM."""
import signal
import subprocess
import sys

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.gavel import GAVEL_THROUGHPUTS
from scheduler.models import Allocation, Job
from scheduler.services import job_submit, job_transition
from telemetry.models import GpuSample, Node
from tests.unit.test_pure_core import copy_agent_install

from .conftest import approve_registered_node
from .test_agent_loop import wait_until
from .test_http_api import daphne  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_documented_install_runs_a_simulated_node_against_a_real_server(daphne, spawn, agent, staff, alice,  # noqa: F811
                                                                            v100, resnet50, tmp_path):
    node_folder = copy_agent_install(tmp_path / "node")
    helped = subprocess.run([sys.executable, "-S", "-m", "telemetry.agent", "--help"], cwd=node_folder,
                            env={"PYTHONPATH": str(node_folder), "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0 and "--simulate" in helped.stdout, helped.stderr

    log = tmp_path / "agent.log"
    proc = subprocess.Popen(
        [sys.executable, "-S", "-m", "telemetry.agent", "--simulate", "--gpus", "v100:1", "--url", daphne,
         "--hostname", "copied-node", "--throughputs", str(GAVEL_THROUGHPUTS), "--heartbeat-interval", "1",
         "--upload-interval", "1", "--poll-interval", "0.5", "--progress-interval", "1", "--speedup", "25",
         "--grace-period", "2", "--log-dir", "jobs"],
        cwd=node_folder, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
        env={"PYTHONPATH": str(node_folder), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1",
             "GOGH_AGENT_TOKEN": Token.objects.create(user=agent).key},
    )
    spawn.started.append(proc)  # stopped at teardown if the test fails before it does
    approve_registered_node(daphne, "copied-node", staff, [log])
    node = Node.objects.get(hostname="copied-node")
    wait_until(lambda: GpuSample.objects.filter(gpu__node=node).count() >= 3, "sample uploads", log)

    job = job_transition(job=job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1,
                                        total_steps=100).job, to="placed")
    Allocation.objects.create(job=job, gpu=node.gpus.get(index=0), start=timezone.now(), predicted_throughput=100)
    wait_until(lambda: Job.objects.get(pk=job.pk).state in {"succeeded", "failed"}, "the job's end", log)
    job.refresh_from_db()
    job_log = node_folder / "jobs" / f"job-{job.pk}"
    assert (job.state, job.steps_done) == ("succeeded", 100), job_log.with_suffix(".err").read_text()
    assert "GOGH_PROGRESS step=100" in job_log.with_suffix(".out").read_text()

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()
    node.refresh_from_db()
    assert node.state == "down"
    assert "Traceback" not in log.read_text()
    assert sorted(path.name for path in node_folder.iterdir()) == ["jobs", "telemetry"]  # nothing else came along
