"""Agents' view of jobs: assignments of their node, progress reports moving the job through
job_transition, and observed throughput recorded in the catalog."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler.models import Allocation, Job
from scheduler.services import job_cancel
from telemetry.models import Gpu, GpuSample
from telemetry.services import node_register
from telemetry.services.job_progress import SAMPLE_WINDOW_S

from .jobs import placed_job
from .reports import node_report

PROGRESS = "/api/telemetry/job-progress/"


@pytest.fixture
def gpus(node1):
    return list(Gpu.objects.filter(node=node1).order_by("index"))


@pytest.fixture
def report(client_for, agent):
    def post(body, user=None):
        return client_for(user or agent).post(PROGRESS, body, format="json")

    return post


def test_assignments_list_the_nodes_open_allocations_with_command_and_gpus(client_for, agent, node1, gpus, alice,
                                                                             resnet50):
    job = placed_job(alice, resnet50, gpus[1:3], total_steps=500)
    placed_job(alice, resnet50, gpus[3:4]).delete()  # gone: nothing listed for it
    cancelled = placed_job(alice, resnet50, gpus[0:1])
    job_cancel(job=cancelled, by=alice)
    response = client_for(agent).get(f"/api/nodes/{node1.pk}/assignments/")
    assert response.status_code == 200
    (item,) = response.json()
    assert item == {
        "job": job.pk, "state": "placed", "allocations": sorted(a.pk for a in job.allocations.all()),
        "gpu_indexes": [1, 2], "gpu_type": "v100", "workload": resnet50.name, "partner": None,
        "command": "train.sh", "environment": {"EPOCHS": "3"}, "total_steps": 500, "steps_done": 0,
    }


def test_only_the_nodes_own_agent_reads_its_assignments(client_for, node1, make_user, alice, staff):
    other = make_user("agent-node2", agent=True)
    url = f"/api/nodes/{node1.pk}/assignments/"
    assert client_for(other).get(url).status_code == 403
    assert client_for(alice).get(url).status_code == 403
    assert client_for(staff).get(url).status_code == 200


def test_progress_moves_the_job_to_running_then_succeeded_and_records_throughput(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:2])
    response = report({"job": job.pk, "status": "running", "steps": 0})
    assert response.status_code == 200 and response.json()["state"] == "running"
    now = timezone.now()
    for i, gpu in enumerate(gpus[:2]):
        GpuSample.objects.create(gpu=gpu, ts=now - timedelta(milliseconds=1), power_w=200 + 20 * i, utilization=0.9,
                                 memory_used_mb=10240 + 1024 * i)
    response = report({"job": job.pk, "status": "running", "steps": 120, "total_steps": 1000, "steps_per_s": 4.2})
    assert response.json() == {"job": job.pk, "state": "running", "steps_done": 120}
    (measurement,) = Measurement.objects.filter(source="telemetry")
    assert (measurement.workload, measurement.gpu_type.name, measurement.num_gpus) == (resnet50, "v100", 2)
    assert measurement.throughput == 4.2 and measurement.consolidated and measurement.partner is None
    assert measurement.power_w == pytest.approx(210) and measurement.utilization == pytest.approx(0.9)
    assert measurement.memory_gb == pytest.approx(11)  # the busier of its two GPUs
    assert measurement.reference == f"telemetry: job {job.pk}"

    report({"job": job.pk, "status": "running", "steps": 200, "steps_per_s": 4.4})  # within the interval
    assert Measurement.objects.filter(source="telemetry").count() == 1
    response = report({"job": job.pk, "status": "succeeded", "steps": 1000, "steps_per_s": 4.3, "exit_code": 0})
    job.refresh_from_db()
    assert (job.state, job.steps_done, job.state_reason) == ("succeeded", 1000, "Exited with status 0.")
    assert job.total_steps == 1000  # learnt from the job's progress lines
    assert job.started_at and job.finished_at
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()
    # none more at the end: the last one, a moment ago, measured nearly the same window
    assert Measurement.objects.filter(source="telemetry").count() == 1


def test_the_end_adds_a_measurement_when_the_last_one_is_older_than_its_window(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    report({"job": job.pk, "status": "running", "steps": 0})
    report({"job": job.pk, "status": "running", "steps": 100, "steps_per_s": 4.2})
    Measurement.objects.filter(source="telemetry").update(observed_at=timezone.now() - timedelta(seconds=SAMPLE_WINDOW_S + 10))
    report({"job": job.pk, "status": "succeeded", "steps": 300, "steps_per_s": 4.4, "exit_code": 0})
    assert sorted(Measurement.objects.filter(source="telemetry").values_list("throughput", flat=True)) == [4.2, 4.4]


def test_a_failed_job_carries_the_agents_message(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    report({"job": job.pk, "status": "failed", "steps": 3, "exit_code": 2, "message": "Exited with status 2; see log."})
    job.refresh_from_db()
    assert (job.state, job.state_reason) == ("failed", "Exited with status 2; see log.")
    assert job.started_at is not None  # it did start: placed -> running -> failed


def test_a_job_no_longer_allocated_is_409_so_the_agent_stops_it(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    job_cancel(job=job, by=alice)
    response = report({"job": job.pk, "status": "running", "steps": 5})
    assert response.status_code == 409 and "stop it" in response.json()["detail"]


def test_another_nodes_job_is_403(report, make_user, gpu_types, alice, resnet50):
    other = make_user("agent-node2", agent=True)
    node2, _ = node_register(agent_user=other, **node_report("node2"))
    job = placed_job(alice, resnet50, list(node2.gpus.all()[:1]))
    assert report({"job": job.pk, "status": "succeeded", "steps": 5}).status_code == 403
    assert Job.objects.get(pk=job.pk).state == "placed"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"job": 999999, "status": "running", "steps": 1}, "job"),
        ({"status": "running", "steps": 1}, "job"),
        ({"job": 1, "status": "exploded", "steps": 1}, "status"),
        ({"job": 1, "status": "running", "steps": -1}, "steps"),
        ({"job": 1, "status": "running", "steps": 1, "steps_per_s": -2}, "steps_per_s"),
        ({"job": 1, "status": "running", "steps": 1, "colour": "red"}, "colour"),
    ],
)
def test_bad_progress_reports_are_400(report, node1, body, field):
    response = report(body)
    assert response.status_code == 400 and field in response.json()


def test_users_cannot_report_progress(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    assert report({"job": job.pk, "status": "succeeded", "steps": 1}, user=alice).status_code == 403


def test_a_measurement_never_averages_samples_from_before_the_job_started(report, gpus, alice, resnet50):
    """The idle GPU before the start must not dilute the job's power (seen on a real H200)."""
    job = placed_job(alice, resnet50, gpus[:1])
    before = timezone.now()
    GpuSample.objects.create(gpu=gpus[0], ts=before - timedelta(seconds=20), power_w=80, utilization=0.0)
    report({"job": job.pk, "status": "running", "steps": 0})
    job.refresh_from_db()
    GpuSample.objects.create(gpu=gpus[0], ts=job.started_at + timedelta(milliseconds=1), power_w=530, utilization=0.97)
    report({"job": job.pk, "status": "running", "steps": 50, "steps_per_s": 30.0})
    (measurement,) = Measurement.objects.filter(source="telemetry")
    assert measurement.power_w == pytest.approx(530) and measurement.utilization == pytest.approx(0.97)
