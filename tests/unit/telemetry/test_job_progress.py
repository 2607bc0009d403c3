"""Agents' view of jobs: assignments of their node, progress reports moving the job through
job_transition, and observed throughput recorded in the catalog."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler.dispatch.progress import SAMPLE_WINDOW_S
from scheduler.models import Allocation, Job
from scheduler.services import job_cancel
from telemetry.models import GpuSample
from telemetry.services import node_register

from .jobs import placed_job
from .reports import node_report

PROGRESS = "/api/telemetry/job-progress/"


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
        "gpu_indexes": [1, 2], "gpu_type": "v100", "workload": resnet50.name, "partners": [],
        "command": "train.sh", "environment": {"EPOCHS": "3"}, "total_steps": 500, "steps_done": 0,
        "resume_step": 0, "resume_checkpoint": "", "preemption_grace_s": 60,
        "placed_at": Job.objects.get(pk=job.pk).placed_at.isoformat(), "power_limits_w": [None, None],
        "power_limit_speed": None,
    }


def test_an_assignment_carries_the_power_limit_of_each_of_its_gpus(client_for, agent, node1, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[1:3])
    Allocation.objects.filter(job=job).update(power_limit_w=180.0, power_limit_speed=0.88)  # as the round writes
    Allocation.objects.filter(job=job, gpu=gpus[1]).update(power_limit_w=None)
    (item,) = client_for(agent).get(f"/api/nodes/{node1.pk}/assignments/").json()
    assert item["gpu_indexes"] == [1, 2] and item["power_limits_w"] == [None, 180.0]
    assert item["power_limit_speed"] == 0.88


def test_an_assignment_lists_the_workloads_of_all_the_jobs_sharing_its_gpu(client_for, agent, node1, gpus, alice,
                                                                           resnet50, lm):
    """A group of three on one GPU: each member's assignment names both others' workloads."""
    job, first, second = (placed_job(alice, w, gpus[0:1]) for w in (resnet50, lm, resnet50))
    for member, others in ((job, [first, second]), (first, [job, second]), (second, [job, first])):
        Allocation.objects.get(job=member).partners.set(others)
    items = {item["job"]: item for item in client_for(agent).get(f"/api/nodes/{node1.pk}/assignments/").json()}
    assert items[job.pk]["partners"] == sorted([lm.name, resnet50.name])
    assert items[first.pk]["partners"] == [resnet50.name, resnet50.name]  # one name per job


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
    _started_ago(job, seconds=40)  # a whole sample window of steady training
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
    assert measurement.reference == f"telemetry: job {job.pk}" and measurement.job_link.job == job

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
    Measurement.objects.filter(source="telemetry").update(
        observed_at=timezone.now() - timedelta(seconds=SAMPLE_WINDOW_S + 10)
    )
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


def test_another_nodes_job_is_400_and_nothing_is_stored(report, make_user, gpu_types, alice, resnet50):
    other = make_user("agent-node2", agent=True)
    node2, _ = node_register(agent_user=other, **node_report("node2"))
    job = placed_job(alice, resnet50, list(node2.gpus.all()[:1]))
    for status in ("running", "succeeded", "preempted"):
        response = report({"job": job.pk, "status": status, "steps": 5, "checkpoint_step": 5, "checkpoint_path": "/c"})
        assert response.status_code == 400
        assert response.json() == {"job": [f"Job {job.pk} is not assigned to this node; it runs elsewhere."]}
    job = Job.objects.get(pk=job.pk)
    assert (job.state, job.steps_done, job.current_step, job.checkpoint_step) == ("placed", 0, 0, None)


@pytest.mark.parametrize(
    "body, field",
    [
        ({"job": 999999, "status": "running", "steps": 1}, "job"),
        ({"status": "running", "steps": 1}, "job"),
        ({"job": 1, "status": "exploded", "steps": 1}, "status"),
        ({"job": 1, "status": "running", "steps": -1}, "steps"),
        ({"job": 1, "status": "running", "steps": 1, "steps_per_s": -2}, "steps_per_s"),
        ({"job": 1, "status": "running", "steps": 1, "colour": "red"}, "colour"),
        ({"job": 2**63, "status": "running", "steps": 1}, "job"),  # beyond the bigint columns: was a 500
        ({"job": 1, "status": "running", "steps": 2**63}, "steps"),
        ({"job": 1, "status": "running", "steps": 1, "total_steps": 2**63}, "total_steps"),
        ({"job": 1, "status": "running", "steps": 1, "steps_per_s": "NaN"}, "steps_per_s"),  # passes min/max
    ],
)
def test_bad_progress_reports_are_400(report, node1, body, field):
    response = report(body)
    assert response.status_code == 400 and field in response.json()


def test_the_largest_step_counts_the_columns_hold_are_stored(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    response = report({"job": job.pk, "status": "running", "steps": 2**63 - 1, "total_steps": 2**63 - 1})
    assert response.status_code == 200 and response.json()["steps_done"] == 2**63 - 1
    assert Job.objects.get(pk=job.pk).total_steps == 2**63 - 1


def test_users_cannot_report_progress(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    assert report({"job": job.pk, "status": "succeeded", "steps": 1}, user=alice).status_code == 403


def _started_ago(job, *, seconds: float, configured_ago: float | None = None) -> None:
    """Pretend the job started `seconds` ago on allocations made `configured_ago` (default: just before)."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(started_at=now - timedelta(seconds=seconds))
    configured = seconds + 1 if configured_ago is None else configured_ago
    Allocation.objects.filter(job=job, end__isnull=True).update(start=now - timedelta(seconds=configured))


def test_power_is_left_empty_until_the_job_ran_a_whole_window(report, gpus, alice, resnet50):
    """Start-up is not what a job draws while it trains (seen on a real H200: 79 W beside 33 steps/s),
    and the idle GPU before the start, or the job before it, is not the job's at all."""
    job = placed_job(alice, resnet50, gpus[:1])
    GpuSample.objects.create(gpu=gpus[0], ts=timezone.now() - timedelta(seconds=20), power_w=80, utilization=0.0,
                             memory_used_mb=99_999)
    report({"job": job.pk, "status": "running", "steps": 0})
    job.refresh_from_db()
    GpuSample.objects.create(gpu=gpus[0], ts=job.started_at + timedelta(milliseconds=1), power_w=90, utilization=0.01,
                             memory_used_mb=4096)
    report({"job": job.pk, "status": "running", "steps": 50, "steps_per_s": 30.0})
    (early,) = Measurement.objects.filter(source="telemetry")
    assert early.throughput == 30.0 and (early.power_w, early.utilization, early.memory_gb) == (None, None, None)


@pytest.mark.parametrize("skew_s", [0, 40, -40])
def test_a_steady_measurement_reads_the_last_window_whatever_the_agents_clock(report, gpus, alice, resnet50, skew_s):
    """Sample times are the agent's clock, which may be off: windows are anchored on its newest sample."""
    job = placed_job(alice, resnet50, gpus[:1])
    report({"job": job.pk, "status": "running", "steps": 0})
    _started_ago(job, seconds=60)
    agent_now = timezone.now() + timedelta(seconds=skew_s)
    GpuSample.objects.create(gpu=gpus[0], ts=agent_now - timedelta(seconds=80), power_w=80, memory_used_mb=99_999)
    GpuSample.objects.create(gpu=gpus[0], ts=agent_now - timedelta(seconds=45), power_w=90, utilization=0.01,
                             memory_used_mb=4096)  # its start-up
    GpuSample.objects.create(gpu=gpus[0], ts=agent_now - timedelta(seconds=1), power_w=530, utilization=0.97,
                             memory_used_mb=8192)
    report({"job": job.pk, "status": "running", "steps": 900, "steps_per_s": 30.5})
    (steady,) = Measurement.objects.filter(source="telemetry")
    assert steady.power_w == pytest.approx(530) and steady.utilization == pytest.approx(0.97)
    assert steady.memory_gb == pytest.approx(8)  # its own peak, not the previous job's 99,999 MB


def test_readings_no_gpu_of_the_type_can_have_are_left_out_of_the_measurement(report, gpus, alice, resnet50):
    """Samples take up to 10 kW and 10 TB; a 16 GB v100 "using" 9.7 TB would keep its workload
    pending for good once the catalog learnt it, so the measurement keeps only its throughput."""
    job = placed_job(alice, resnet50, gpus[:1])
    report({"job": job.pk, "status": "running", "steps": 0})
    _started_ago(job, seconds=60)
    GpuSample.objects.create(gpu=gpus[0], ts=timezone.now() - timedelta(seconds=1), power_w=9000, utilization=0.9,
                             memory_used_mb=10_000_000)
    report({"job": job.pk, "status": "running", "steps": 900, "steps_per_s": 30.5})
    (measurement,) = Measurement.objects.filter(source="telemetry")
    assert (measurement.throughput, measurement.power_w, measurement.memory_gb) == (30.5, None, None)
    assert measurement.utilization == pytest.approx(0.9)


def test_no_pair_measurement_before_the_partner_ran_a_whole_window_beside_it(report, gpus, alice, resnet50):
    """A job that joins is only placed, then starts up: meanwhile the rate is the survivor's alone."""
    survivor, joiner = placed_job(alice, resnet50, gpus[:1]), placed_job(alice, resnet50, gpus[1:2])
    for allocation in Allocation.objects.filter(job=survivor):
        allocation.partners.set([joiner])
    report({"job": survivor.pk, "status": "running", "steps": 0})
    _started_ago(survivor, seconds=120, configured_ago=40)  # the joiner was placed 40 s ago
    report({"job": survivor.pk, "status": "running", "steps": 900, "steps_per_s": 30.5})
    assert not Measurement.objects.filter(source="telemetry").exists()  # joiner still placed
    Job.objects.filter(pk=joiner.pk).update(state="running", started_at=timezone.now() - timedelta(seconds=35))
    report({"job": survivor.pk, "status": "running", "steps": 1300, "steps_per_s": 14.0})
    (pair,) = Measurement.objects.filter(source="telemetry")
    assert (pair.throughput, pair.partner) == (14.0, resnet50)


def test_no_measurement_for_a_job_sharing_its_gpu_with_two_jobs(report, gpus, alice, resnet50, lm):
    """The catalog holds alone runs and pairs: a rate next to two jobs is no pair's, even with
    both partners running a whole window beside it."""
    job, first, second = placed_job(alice, resnet50, gpus[:1]), placed_job(alice, lm, gpus[1:2]), placed_job(
        alice, resnet50, gpus[2:3])
    Allocation.objects.get(job=job).partners.set([first, second])
    Job.objects.filter(pk__in=[first.pk, second.pk]).update(state="running",
                                                            started_at=timezone.now() - timedelta(seconds=120))
    report({"job": job.pk, "status": "running", "steps": 0})
    _started_ago(job, seconds=120)
    report({"job": job.pk, "status": "running", "steps": 900, "steps_per_s": 9.0})
    assert not Measurement.objects.filter(source="telemetry").exists()
    assert Job.objects.get(pk=job.pk).steps_done == 900  # the progress itself is taken
    Allocation.objects.get(job=job).partners.set([first])  # the same, next to one of them: a pair
    report({"job": job.pk, "status": "running", "steps": 1300, "steps_per_s": 12.0})
    (pair,) = Measurement.objects.filter(source="telemetry")
    assert (pair.throughput, pair.partner) == (12.0, lm)


def test_no_measurement_while_a_partner_change_is_younger_than_the_window(report, gpus, alice, resnet50):
    """The agent's rate then mixes the rate with the old partner and with the new one."""
    job = placed_job(alice, resnet50, gpus[:1])
    report({"job": job.pk, "status": "running", "steps": 0})
    _started_ago(job, seconds=120, configured_ago=5)  # new allocation rows 5 s ago: its partner left
    report({"job": job.pk, "status": "running", "steps": 900, "steps_per_s": 12.0})
    assert not Measurement.objects.filter(source="telemetry").exists()
    _started_ago(job, seconds=120, configured_ago=40)
    report({"job": job.pk, "status": "running", "steps": 1300, "steps_per_s": 21.0})
    assert Measurement.objects.get(source="telemetry").throughput == 21.0
