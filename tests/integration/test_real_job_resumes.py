"""A real PyTorch training job under the job contract (tests/device/train_job.py, its tiny
model on the CPU) on simulated-GPU nodes whose agents run jobs' own commands: placed by a
round on node A, it checkpoints; a higher-priority job preempts it (SIGTERM, it checkpoints
and exits 75); once node B takes work again it resumes there, at its checkpoint, and
succeeds. What the second run did is read from the job's own output on node B.

Node B is drained while the job runs on A, so that the higher-priority job can only preempt it
(and not take B's free GPU); once it has, A is drained (the higher-priority job runs on) and B
undrained: the next periodic round (Celery beat, every 5 s) can only send the job to B. Each
step takes at least 75 ms (--min-step-s), so that the first run, which cannot end within 30 s, is
still running when the higher-priority job comes however fast the machine: unpaced (about 30
steps/s alone) it once ended before the preemption reached it, killed by the SIGTERM while its
interpreter shut down, and was resumed from its last periodic checkpoint."""
import json
import sys

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from scheduler.models import Allocation, Job, JobInterruption
from scheduler.services import solver_config_update
from telemetry.models import Node

from .keep_work import JobsWatch, NodeSpec, job_runs, start_control_plane, tails, wait_for
from .test_http_api import call

pytestmark = pytest.mark.django_db(transaction=True)

NODE_A = NodeSpec("real-a", "v100:1", ("--run-commands",))
NODE_B = NodeSpec("real-b", "v100:1", ("--run-commands",))
STEPS = 400
GRACE_S = 20
MIN_STEP_S = 0.075


def train(steps: int) -> str:
    return f"{sys.executable} tests/device/train_job.py --model tiny --batch-size 64 --checkpoint-every 50 " \
           f"--min-step-s {MIN_STEP_S} --steps {steps}"


def submit(watch: JobsWatch, steps: int, priority: int = 0) -> int:
    status, body = call(watch.base, "/api/jobs/", watch.token, {
        "workload": "ResNet-50 (batch size 64)", "min_throughput": 0.1, "max_gpus": 1, "total_steps": steps,
        "priority": priority, "command": train(steps), "preemption_grace_s": GRACE_S,
        "environment": {"OMP_NUM_THREADS": "1"},
    })
    assert status == 201, body
    return json.loads(body)["id"]


def node_state(cluster, staff_token: str, hostname: str, action: str) -> None:
    """An operator drains or undrains a node (POST /api/nodes/{id}/<action>/)."""
    node = Node.objects.get(hostname=hostname)
    status, body = call(cluster.base, f"/api/nodes/{node.pk}/{action}/", staff_token, {})
    assert status == 200, body


def every_log(cluster) -> list:
    return cluster.logs + sorted(cluster.spawn.folder.glob("jobs/*/*.out"))


@pytest.fixture
def cluster(spawn, agent, staff, resnet50, v100):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.4, source="reference",
                               observed_at=timezone.now())
    solver_config_update(by=None, values={"theta": 1})  # the urgent job cannot share the GPU
    cluster = start_control_plane(spawn, hostnames=[NODE_A.hostname, NODE_B.hostname], speedup=1,
                                  agent_token=Token.objects.create(user=agent).key)
    cluster.start_agent(NODE_A)
    cluster.start_agent(NODE_B, seed=1)
    cluster.wait_ready([NODE_A.hostname, NODE_B.hostname])
    cluster.staff_token = Token.objects.get_or_create(user=staff)[0].key
    node_state(cluster, cluster.staff_token, NODE_B.hostname, "drain")
    return cluster


def test_a_pytorch_job_is_preempted_and_resumes_at_its_checkpoint_on_another_node(cluster, alice):
    watch = JobsWatch(cluster.base, Token.objects.create(user=alice).key)
    job_id = submit(watch, STEPS)

    def checkpointed_and_past_it() -> bool:
        item = next(item for item in watch.poll() if item["id"] == job_id)
        return item["state"] == "running" and (item["checkpoint_step"] or 0) > 0 and (
            item["current_step"] > item["checkpoint_step"])

    wait_for(checkpointed_and_past_it, "a checkpoint on node A and progress beyond it", every_log(cluster), 120)
    urgent = submit(watch, 100, priority=10)
    wait_for(lambda: JobInterruption.objects.filter(job_id=job_id).exists(), "the preemption", every_log(cluster), 60)
    node_state(cluster, cluster.staff_token, NODE_A.hostname, "drain")
    node_state(cluster, cluster.staff_token, NODE_B.hostname, "undrain")
    wait_for(lambda: not Job.objects.filter(pk__in=[job_id, urgent]).exclude(state="succeeded").exists(),
             "both jobs' success", every_log(cluster), 180)

    job = Job.objects.get(pk=job_id)
    (interruption,) = job.interruptions.all()
    assert interruption.kind == "preempted" and interruption.was_running and interruption.reason.strip()
    assert Allocation.objects.filter(job_id=urgent, solve_run=interruption.solve_run).exists()
    hosts = list(Allocation.objects.filter(job=job).order_by("start").values_list("gpu__node__hostname", flat=True))
    assert hosts == [NODE_A.hostname, NODE_B.hostname], hosts

    first, second = job_runs(cluster.job_logs, job_id, lambda line: line.startswith("device "))
    assert (first.node, second.node) == (NODE_A.hostname, NODE_B.hostname), tails(every_log(cluster))
    # On A it checkpointed every 50 steps, and once more when told to stop, then exited 75.
    stop = first.checkpoints[-1]
    assert first.checkpoints[:-1] and all(step % 50 == 0 for step in first.checkpoints[:-1]), first.lines
    assert first.lines[-1] == f"preempted at step {stop}" and first.steps[-1] == stop, first.lines[-3:]
    # The control plane resumed it there (the stop's checkpoint, handed over by A's last report).
    assert (interruption.resume_step, interruption.steps_done, interruption.steps_lost) == (stop, stop, 0)
    assert (job.state, job.steps_done, job.restarts, job.steps_lost) == ("succeeded", STEPS, 1, 0)
    # The second run, by its own account, loaded that checkpoint and went on from its step.
    assert f"resumed at step {stop} from {first.paths[stop]}" in second.lines, second.lines[:4]
    assert second.start == stop and second.steps == sorted(second.steps) and second.steps[-1] == STEPS
    assert second.lines[-1].startswith("final loss") and not any(line.startswith("final") for line in first.lines)
