"""Job reports after the control plane took the job away, and the batched report endpoint.

A node given up as silent may have run a job to its end: its late success is kept (the job
ends succeeded, a new copy's allocations close), a late failure is refused and changes
nothing. A node's agent reports all its jobs in one request, each report answered on its own."""
import pytest
from django.utils import timezone

from scheduler.models import Allocation, Job
from scheduler.services import job_transition
from telemetry.models import Gpu, Node
from telemetry.services import node_register, node_set_state

from .jobs import placed_job
from .reports import node_report

PROGRESS = "/api/telemetry/job-progress/"
BATCH = "/api/telemetry/job-progress/batch/"


@pytest.fixture
def node2_gpus(gpu_types, make_user):
    """node2, registered by another agent account."""
    other = make_user("agent-node2", agent=True)
    node, _ = node_register(agent_user=other, **node_report("node2"))
    return list(Gpu.objects.filter(node=node).order_by("index"))


@pytest.fixture
def requeued(gpus, alice, resnet50, node1):
    """A job that ran on node1 until node1 was given up (down): pending again."""
    job = job_transition(job=placed_job(alice, resnet50, gpus[:1], total_steps=100), to="running")
    node_set_state(node=node1, state="down", reason="no heartbeat for 60 s")
    job.refresh_from_db()
    assert job.state == "pending"
    return job


def final(job, status="succeeded", steps=100, **fields):
    return {"job": job.pk, "status": status, "steps": steps, "exit_code": 0 if status == "succeeded" else 1, **fields}


def snapshot(job):
    job = Job.objects.get(pk=job.pk)
    return (job.state, job.state_reason, job.steps_done, job.finished_at,
            list(Allocation.objects.filter(job=job).order_by("pk").values_list("pk", "end")))


def test_a_late_success_of_a_requeued_job_ends_it_succeeded(client_for, agent, requeued):
    response = client_for(agent).post(PROGRESS, final(requeued), format="json")
    assert response.status_code == 200 and response.json()["state"] == "succeeded"
    job = Job.objects.get(pk=requeued.pk)
    assert job.state == "succeeded" and job.steps_done == 100 and job.finished_at is not None
    assert "the node that last ran it" in job.state_reason


def test_a_late_success_stops_the_new_copy(client_for, agent, requeued, node2_gpus):
    job = job_transition(job=requeued, to="placed")
    Allocation.objects.create(job=job, gpu=node2_gpus[0], start=timezone.now())
    job = job_transition(job=job, to="running")  # the new copy runs on node2
    response = client_for(agent).post(PROGRESS, final(job), format="json")
    assert response.status_code == 200
    assert Job.objects.get(pk=job.pk).state == "succeeded"
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()  # node2's agent stops it at its next poll


def test_a_late_success_of_a_job_placed_anew_but_not_started(client_for, agent, requeued, node2_gpus):
    job = job_transition(job=requeued, to="placed")
    Allocation.objects.create(job=job, gpu=node2_gpus[0], start=timezone.now())
    assert client_for(agent).post(PROGRESS, final(job), format="json").status_code == 200
    assert Job.objects.get(pk=job.pk).state == "succeeded"


def test_a_late_failure_or_progress_is_refused_and_changes_nothing(client_for, agent, requeued):
    before = snapshot(requeued)
    for report in (final(requeued, "failed", steps=50), final(requeued, "running", steps=60)):
        assert client_for(agent).post(PROGRESS, report, format="json").status_code == 409
    assert snapshot(requeued) == before


def test_only_the_node_that_last_held_the_job_may_end_it_late(client_for, requeued, node2_gpus, make_user):
    before = snapshot(requeued)
    stranger = Node.objects.get(hostname="node2").agent  # never held this job
    assert client_for(stranger).post(PROGRESS, final(requeued), format="json").status_code == 409
    assert snapshot(requeued) == before


def test_an_end_reported_again_is_answered_with_the_job(client_for, agent, requeued):
    assert client_for(agent).post(PROGRESS, final(requeued), format="json").status_code == 200
    again = client_for(agent).post(PROGRESS, final(requeued), format="json")
    assert again.status_code == 200 and again.json()["state"] == "succeeded"


def test_a_batch_answers_each_report_on_its_own(client_for, agent, gpus, node2_gpus, alice, resnet50):
    started = placed_job(alice, resnet50, gpus[:1])
    ending = job_transition(job=placed_job(alice, resnet50, gpus[1:2]), to="running")
    withdrawn = placed_job(alice, resnet50, gpus[2:3])
    job_transition(job=withdrawn, to="pending", reason="Preempted.")
    elsewhere = placed_job(alice, resnet50, node2_gpus[:1])
    withdrawn_before, elsewhere_before = snapshot(withdrawn), snapshot(elsewhere)
    reports = [
        {"job": started.pk, "status": "running", "steps": 5},
        {"job": withdrawn.pk, "status": "running", "steps": 7},
        {"job": ending.pk, "status": "succeeded", "steps": 40, "exit_code": 0},
        {"job": elsewhere.pk, "status": "running", "steps": 9},
        {"job": started.pk, "status": "exploded", "steps": 5},
        {"job": 999999, "status": "running", "steps": 1},
    ]
    response = client_for(agent).post(BATCH, {"reports": reports}, format="json")
    assert response.status_code == 200
    answers = response.json()["results"]
    assert [(a["job"], a["status"]) for a in answers] == [
        (started.pk, 200), (withdrawn.pk, 409), (ending.pk, 200), (elsewhere.pk, 400), (started.pk, 400), (999999, 400),
    ]
    assert answers[0]["state"] == "running" and answers[2]["state"] == "succeeded"
    assert "status" in answers[4]["errors"] and "job" in answers[5]["errors"]
    assert answers[3]["errors"] == {"job": [f"Job {elsewhere.pk} is not assigned to this node; it runs elsewhere."]}
    assert Job.objects.get(pk=started.pk).steps_done == 5
    assert snapshot(withdrawn) == withdrawn_before and snapshot(elsewhere) == elsewhere_before


@pytest.mark.parametrize("body", [{}, {"reports": []}, {"reports": "all"}, {"reports": [1]}, {"reports": [], "x": 1}])
def test_a_batch_that_is_not_a_list_of_reports_is_400(client_for, agent, node1, body):
    response = client_for(agent).post(BATCH, body, format="json")
    assert response.status_code == 400 and response.json()


def test_a_batch_needs_an_agent(client_for, alice, node1):
    body = {"reports": [{"job": 1, "status": "running", "steps": 1}]}
    assert client_for(alice).post(BATCH, body, format="json").status_code == 403
    assert client_for(None).post(BATCH, body, format="json").status_code == 401
