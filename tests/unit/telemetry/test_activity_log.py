"""The activity log (gogh_web.activity, the lines run_stack shows): one line per fact, written
once the change commits, nothing for a change that is rolled back."""
import logging
import re

import pytest
from django.db import transaction
from django.utils import timezone

from catalog.models import Measurement
from scheduler.dispatch.progress import job_progress_report
from scheduler.models import Allocation, Job
from scheduler.services import job_submit, job_transition, scheduling_round_run
from telemetry.services import node_heartbeat, node_register, node_set_state

from .jobs import placed_job
from .reports import node_report


@pytest.fixture
def activity():
    """The messages logged on gogh.activity during the test, in order (the logger does not
    propagate to the root logger, where caplog listens)."""
    lines = []
    handler = logging.Handler(level=logging.INFO)
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("gogh.activity")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(): a block whose on-commit callbacks run at its end, as after a real commit."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def measured(resnet50, v100):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, num_gpus=1, throughput=10.0, source="reference",
                               observed_at=timezone.now())


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_a_jobs_life_is_one_line_per_step(node1, alice, agent, resnet50, measured, activity, committed):
    with committed():
        job = job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1, total_steps=500).job
    with committed():
        run = scheduling_round_run(trigger="manual").solve_run
    with committed():
        job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=10)
        job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=250)
    with committed():
        job_progress_report(agent_user=agent, job_id=job.pk, status="succeeded", steps=500)

    gpu = Allocation.objects.get(job=job).gpu
    where = f"node1 GPU {gpu.index} (v100)"
    assert [re.sub(r"in [\d.]+ s$", "in S s", line) for line in activity] == [
        f"job {job.pk} submitted by alice (tenant research): ResNet-50 (batch size 64), T_min 8 steps/s, "
        "at most 1 GPU(s), 500 steps",
        f"round {run.pk} (manual): 1 placed, 0 pending; ilp optimal in S s",
        f"job {job.pk} placed on {where}, predicted 10 steps/s",
        f"job {job.pk} started on {where}",
        f"job {job.pk} succeeded after 500 steps: Exited with status 0.",
    ]


def test_a_round_that_changes_nothing_says_nothing(node1, alice, resnet50, measured, activity, committed):
    job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1)
    scheduling_round_run(trigger="manual")
    with committed():
        scheduling_round_run(trigger="periodic")
    assert activity == []


def test_a_job_no_gpu_can_serve_is_pending_with_its_reason(node1, alice, resnet50, measured, activity, committed):
    job = job_submit(owner=alice, workload=resnet50, min_throughput=5000, max_gpus=1).job
    with committed():
        run = scheduling_round_run(trigger="manual").solve_run
    reason = Job.objects.get(pk=job.pk).pending_reason
    assert reason and activity[1:] == [f"job {job.pk} pending: {reason}"]
    assert activity[0].startswith(f"round {run.pk} (manual): 0 placed, 1 pending; ")


def test_a_node_going_down_and_coming_back(node1, gpus, alice, resnet50, agent, activity, committed):
    Measurement.objects.create(workload=resnet50, gpu_type=gpus[0].gpu_type, throughput=4.0, source="reference",
                               observed_at=timezone.now())  # a known type: its heartbeats start no profiling
    job = job_transition(job=placed_job(alice, resnet50, gpus[:1]), to="running")
    with committed():
        node_set_state(node=node1, state="down", reason="maintenance")
    with committed():
        node_heartbeat(node=node1, agent_user=agent)
        node_heartbeat(node=node1, agent_user=agent)  # already up: nothing new
    assert activity == [
        "node node1 down: maintenance",
        f"job {job.pk} back to pending: Node node1 went down: maintenance",
        "node node1 up (ready): its agent is heard again",
    ]


def test_registration_and_drain(gpu_types, agent, activity, committed):
    with committed():
        node, _ = node_register(agent_user=agent, **node_report("node2"))
    with committed():
        node_set_state(node=node, state="draining", reason="new power supply")
        node_set_state(node=node, state="ready")
    with committed():
        node_register(agent_user=agent, **node_report("node2"))
    assert activity == [
        "node node2 registered: 4 v100, cell cell-a, ready, waiting for an operator's approval",
        "node node2 drained by an operator: new power supply",
        "node node2 undrained by an operator",
        "node node2 registered again: 4 v100, cell cell-a, ready, waiting for an operator's approval",
    ]


def test_a_rolled_back_change_logs_nothing(node1, alice, resnet50, activity, committed):
    with committed(), pytest.raises(RuntimeError), transaction.atomic():
        job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1)
        node_set_state(node=node1, state="down", reason="maintenance")
        raise RuntimeError("the request failed after these writes")
    assert activity == []
    assert not Job.objects.exists()
