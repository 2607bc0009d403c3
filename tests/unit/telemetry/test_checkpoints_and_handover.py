"""A job keeps its work (docs/jobs.md): reports carry the run's checkpoint, which the control
plane keeps; reports that contradict it are refused with a reason and store nothing; a run
that stops to be resumed ("preempted") hands its checkpoint over to the next run, which the
node's agent starts from there; the first progress of a restarted run measures what the
restart cost."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler import services
from scheduler.interruptions import HANDOVER_MARGIN
from scheduler.models import Allocation, Job, JobInterruption, SolveRun
from scheduler.optimizer import problem as opt
from scheduler.services import job_transition
from telemetry.models import Gpu
from telemetry.services import node_register, node_set_state

from .jobs import placed_job
from .reports import node_report

PROGRESS = "/api/telemetry/job-progress/"
#: Every column a report may change, to tell that a refused one changed nothing.
JOB_COLUMNS = ("state", "state_reason", "steps_done", "current_step", "resume_step", "total_steps", "checkpoint_step",
               "checkpoint_path", "checkpoint_at", "restarts", "steps_lost", "handover_until", "started_at",
               "updated_at")


@pytest.fixture
def report(client_for, agent):
    def post(body, user=None):
        return client_for(user or agent).post(PROGRESS, body, format="json")

    return post


def row(job):
    job = Job.objects.get(pk=job.pk)
    return {column: getattr(job, column) for column in JOB_COLUMNS}


def tick(job_id, status="running", steps=0, checkpoint=None, **fields):
    """A report body; `checkpoint`: its step, at path /ckpt/<step>."""
    path = f"/ckpt/{checkpoint}" if checkpoint is not None else ""
    return {"job": job_id, "status": status, "steps": steps, "checkpoint_step": checkpoint, "checkpoint_path": path,
            **fields}


@pytest.fixture
def running(report, gpus, alice, resnet50):
    """A 1000-step job running on node1's GPU 0, at step 150 with a checkpoint at step 100."""
    job = placed_job(alice, resnet50, gpus[:1], total_steps=1000)
    assert report(tick(job.pk, steps=0)).status_code == 200
    assert report(tick(job.pk, steps=150, checkpoint=100)).status_code == 200
    return Job.objects.get(pk=job.pk)


def move(job, gpu):
    """A round moves `job` to `gpu` (services._apply, as a scheduling round applies a decision)."""
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    placement = opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                              partners=(), predicted_throughput=5.0, predicted_power_w=180.0)
    plan = opt.Plan(solver="ilp", placements={str(job.pk): placement}, reasons={}, power_w=180.0, objective=1.0,
                    status="optimal", energy_weight=1.0, load=0.0)
    services._apply(plan, run, timezone.now())
    return run


def test_progress_and_checkpoints_are_kept(running):
    assert (running.current_step, running.steps_done) == (150, 150)
    assert (running.checkpoint_step, running.checkpoint_path) == (100, "/ckpt/100")
    assert running.checkpoint_at is not None and running.resume_step == 0


def test_the_same_checkpoint_reported_again_changes_nothing_of_it(report, running):
    assert report(tick(running.pk, steps=160, checkpoint=100)).status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.checkpoint_at, job.current_step) == (100, running.checkpoint_at, 160)


def at(steps, checkpoint=None, path=None):
    """A report's position and checkpoint; `path` defaults to /ckpt/<checkpoint>."""
    return {"steps": steps, "checkpoint_step": checkpoint,
            "checkpoint_path": path if path is not None else (f"/ckpt/{checkpoint}" if checkpoint is not None else "")}


@pytest.mark.parametrize(
    "fields, errors",
    [
        (at(50), {"steps": ["Step 50 is below the job's last checkpoint, at step 100: a run resumes at its "
                            "checkpoint."]}),
        (at(1500, 1200), {"checkpoint_step": ["Checkpoint step 1200 is beyond the job's 1000 steps."]}),
        (at(160, 80), {"checkpoint_step": ["Checkpoint step 80 is older than the job's last checkpoint, at step "
                                           "100."]}),
        (at(160, 170), {"checkpoint_step": ["Checkpoint step 170 is beyond the run's step 160."]}),
        (at(160, 120, path=""), {"checkpoint_path": ["Give the path of the checkpoint at this step."]}),
        (at(160, None, path="/c"), {"checkpoint_step": ["Give the step of the checkpoint at this path."]}),
        (at(160, -1), None),
        (at(160, 120, path="/" + "x" * 1000), None),
    ],
)
def test_reports_that_contradict_the_checkpoint_are_400_and_store_nothing(report, running, fields, errors):
    before = row(running)
    response = report({"job": running.pk, "status": "running", **fields})
    assert response.status_code == 400
    if errors is not None:
        assert response.json() == errors
    assert row(running) == before


def test_a_checkpoint_beyond_the_length_the_report_gives_is_400_for_a_job_of_unknown_length(report, gpus, alice,
                                                                                            resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    before = row(job)
    response = report(tick(job.pk, steps=600, checkpoint=600, total_steps=500))
    assert response.status_code == 400 and response.json() == {
        "checkpoint_step": ["Checkpoint step 600 is beyond the job's 500 steps."]}
    assert row(job) == before


def test_a_length_shorter_than_the_checkpoint_is_400(report, gpus, alice, resnet50):
    """The database holds a checkpoint within the job's steps: a length that contradicts the
    checkpoint is refused rather than stored (it was a 500)."""
    job = placed_job(alice, resnet50, gpus[:1])
    assert report(tick(job.pk, steps=600, checkpoint=600)).status_code == 200
    before = row(job)
    response = report(tick(job.pk, steps=650, total_steps=500))
    assert response.status_code == 400
    assert response.json() == {"total_steps": ["500 steps end before the job's last checkpoint, at step 600."]}
    assert row(job) == before


def test_the_batch_refuses_a_contradicting_report_alone(client_for, agent, running):
    before = row(running)
    answer = client_for(agent).post(f"{PROGRESS}batch/", {"reports": [tick(running.pk, steps=10)]}, format="json")
    (result,) = answer.json()["results"]
    assert result["status"] == 400 and list(result["errors"]) == ["steps"]
    assert row(running) == before


def test_a_run_its_agent_stopped_says_why_in_its_reason(report, running):
    """The node leaving (or its GPU failing, or the agent out of touch) stops the job on the
    node before the control plane hears the node went: the stop report's words say which."""
    message = "Stopped by the agent: the node's agent is stopping and the node leaves (exit status 75)."
    response = report(tick(running.pk, "preempted", steps=180, checkpoint=170, exit_code=75, message=message))
    assert response.status_code == 200
    reason = "Its run was stopped at step 180 by its node's agent: the node's agent is stopping and the node " \
             "leaves (exit status 75); it resumes from its checkpoint at step 170."
    assert Job.objects.get(pk=running.pk).pending_reason == reason
    assert JobInterruption.objects.get(job=running).reason == reason


def test_an_end_below_the_checkpoint_is_recorded(report, running):
    response = report(tick(running.pk, "failed", steps=40, exit_code=1))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.state, job.current_step, job.steps_done) == ("failed", 40, 150)


def test_a_run_that_exits_to_be_resumed_goes_back_to_pending_and_keeps_its_checkpoint(report, running):
    response = report(tick(running.pk, "preempted", steps=180, checkpoint=170, exit_code=75))
    assert response.status_code == 200 and response.json()["state"] == "pending"
    job = Job.objects.get(pk=running.pk)
    reason = "Its run stopped at step 180 asking to be resumed (exit status 75); it resumes from its checkpoint at " \
             "step 170."
    assert (job.state, job.pending_reason) == ("pending", reason)
    assert (job.checkpoint_step, job.resume_step, job.current_step, job.steps_done) == (170, 170, 170, 180)
    assert (job.restarts, job.steps_lost, job.handover_until) == (1, 10, None)
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()
    (stop,) = JobInterruption.objects.filter(job=job)
    assert (stop.kind, stop.reason, stop.was_running, stop.solve_run) == ("stopped", reason, True, None)
    assert (stop.steps_done, stop.resume_step, stop.steps_lost) == (180, 170, 10)


def test_a_run_without_checkpoint_that_exits_to_be_resumed_loses_all_its_steps(report, gpus, alice, resnet50):
    job = placed_job(alice, resnet50, gpus[:1])
    assert report(tick(job.pk, "preempted", steps=90, exit_code=75)).status_code == 200
    job = Job.objects.get(pk=job.pk)
    assert "it made no checkpoint, so it starts again from step 0." in job.pending_reason
    assert (job.restarts, job.steps_lost, job.resume_step, job.current_step, job.steps_done) == (1, 90, 0, 0, 90)
    assert job.started_at is not None  # it did run


def test_a_round_moving_a_running_job_holds_its_next_run_until_the_last_one_reports_its_stop(
        client_for, agent, node1, report, running, gpus):
    before = timezone.now()
    run = move(running, gpus[1])  # same node, another GPU
    job = Job.objects.get(pk=running.pk)
    (stop,) = JobInterruption.objects.filter(job=job)
    assert (stop.kind, stop.solve_run, stop.was_running) == ("moved", run, True)
    assert stop.reason == f"Moved by solve {run.pk} to node1 GPU 1 (v100)."  # its old GPU predicted nothing
    assert (stop.steps_done, stop.resume_step, stop.steps_lost) == (150, 100, 50)
    assert (job.state, job.restarts, job.steps_lost, job.resume_step, job.current_step) == ("placed", 1, 50, 100, 100)
    assert job.steps_done == 150  # the best it reached stays
    grace = timedelta(seconds=job.preemption_grace_s) + HANDOVER_MARGIN
    assert before + grace <= job.handover_until <= timezone.now() + grace
    assignments = f"/api/nodes/{node1.pk}/assignments/"
    assert client_for(agent).get(assignments).json() == []  # its last run is still stopping

    held = row(job)
    assert report(tick(job.pk, steps=175, checkpoint=100)).status_code == 409  # the last run, still going
    assert report(tick(job.pk, "failed", steps=175, exit_code=-9)).status_code == 409
    assert row(job) == held

    response = report(tick(job.pk, "preempted", steps=180, checkpoint=170, exit_code=75))
    assert response.status_code == 200 and response.json() == {"job": job.pk, "state": "placed", "steps_done": 180}
    job = Job.objects.get(pk=job.pk)
    assert (job.checkpoint_step, job.resume_step, job.current_step, job.steps_lost) == (170, 170, 170, 10)
    assert job.handover_until <= timezone.now() and (job.restarts, job.state) == (1, "placed")
    stop.refresh_from_db()
    assert (stop.steps_done, stop.resume_step, stop.steps_lost) == (180, 170, 10)
    (item,) = client_for(agent).get(assignments).json()
    assert (item["job"], item["gpu_indexes"], item["resume_step"], item["resume_checkpoint"]) == (
        job.pk, [1], 170, "/ckpt/170")

    again = row(job)
    assert report(tick(job.pk, "preempted", steps=180, checkpoint=170, exit_code=75)).status_code == 200
    assert row(job) == again  # its answer was lost: the same stop sent again changes nothing
    assert report(tick(job.pk, steps=170, checkpoint=170)).json()["state"] == "running"  # the next run
    assert Job.objects.get(pk=job.pk).handover_until is None


def test_an_older_checkpoint_in_a_handover_is_not_recorded(report, running, gpus):
    move(running, gpus[1])
    assert report(tick(running.pk, "preempted", steps=160, checkpoint=50, exit_code=75)).status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.steps_lost) == (100, 100, 60)


@pytest.fixture
def node2_gpus(gpu_types, make_user):
    other = make_user("agent-node2", agent=True)
    node, _ = node_register(agent_user=other, **node_report("node2"))
    node.approved_at = timezone.now()
    node.save()
    return list(Gpu.objects.filter(node=node).order_by("index"))


def test_a_job_moved_to_another_node_is_handed_over_by_the_node_that_ran_it(report, running, node2_gpus):
    move(running, node2_gpus[2])
    assert report(tick(running.pk, steps=160, checkpoint=100)).status_code == 409  # not here any more: stop it
    holder = node2_gpus[0].node.agent  # holds it now, and was not told to run it yet
    before = row(running)
    for status in ("running", "preempted", "failed"):
        response = report(tick(running.pk, status, steps=160, checkpoint=100, exit_code=75), user=holder)
        assert response.status_code == 409
    assert row(running) == before
    response = report(tick(running.pk, "preempted", steps=190, checkpoint=190, exit_code=75))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.steps_lost) == (190, 190, 0)
    assert (job.steps_done, job.current_step) == (190, 190)

    assert report(tick(job.pk, steps=190, checkpoint=190), user=holder).json()["state"] == "running"  # next run
    started = row(job)
    assert report(tick(job.pk, "preempted", steps=195, checkpoint=190, exit_code=75)).status_code == 409  # too late
    assert row(job) == started


def test_a_restarted_runs_first_progress_measures_what_the_restart_cost(report, running, gpus):
    move(running, gpus[1])
    report(tick(running.pk, "preempted", steps=150, checkpoint=100, exit_code=75))
    assert report(tick(running.pk, steps=100, checkpoint=100)).status_code == 200  # the next run starts
    started_at = timezone.now() - timedelta(seconds=40)
    Job.objects.filter(pk=running.pk).update(started_at=started_at)
    JobInterruption.objects.filter(job=running).update(at=started_at - timedelta(seconds=5))
    report(tick(running.pk, steps=200, checkpoint=100))  # no rate yet: nothing measured
    stop = JobInterruption.objects.get(job=running)
    assert (stop.overhead_s, stop.resumed_at) == (None, None)
    report(tick(running.pk, steps=300, checkpoint=100, steps_per_s=10.0))  # 200 steps at 10/s: 20 s of the 40
    stop.refresh_from_db()
    assert stop.overhead_s == pytest.approx(20, abs=1) and stop.resumed_at == started_at
    report(tick(running.pk, steps=900, checkpoint=100, steps_per_s=10.0))
    stop.refresh_from_db()
    assert stop.overhead_s == pytest.approx(20, abs=1)  # once


def test_steps_done_never_decreases_in_the_api_across_a_restart(client_for, alice, report, running, gpus):
    seen = []

    def look():
        body = client_for(alice).get(f"/api/jobs/{running.pk}/").json()
        seen.append((body["steps_done"], body["current_step"]))

    look()
    move(running, gpus[1])
    look()
    report(tick(running.pk, "preempted", steps=160, checkpoint=100, exit_code=75))
    look()
    report(tick(running.pk, steps=100, checkpoint=100))
    look()
    report(tick(running.pk, steps=155, checkpoint=100))
    look()
    assert seen == [(150, 150), (150, 100), (160, 100), (160, 100), (160, 155)]
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))


def test_a_late_success_keeps_a_newer_checkpoint_only(report, running, gpus):
    job = job_transition(job=running, to="pending", reason="Requeued.")
    response = report(tick(job.pk, "succeeded", steps=1000, checkpoint=90, exit_code=0))
    assert response.status_code == 200
    job = Job.objects.get(pk=job.pk)
    assert (job.state, job.steps_done, job.checkpoint_step) == ("succeeded", 1000, 100)


def test_the_node_that_ran_a_job_hands_it_over_after_the_job_was_moved_again_before_starting(
        report, running, node2_gpus):
    """Moved to node2, then within node2 before it started: node1 still ran it last."""
    move(running, node2_gpus[0])
    move(Job.objects.get(pk=running.pk), node2_gpus[1])
    assert [stop.was_running for stop in JobInterruption.objects.filter(job=running).order_by("at", "id")] == [
        True, False]
    response = report(tick(running.pk, "preempted", steps=170, checkpoint=160, exit_code=75))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.steps_lost, job.restarts) == (160, 160, 10, 1)
    ran = JobInterruption.objects.get(job=job, was_running=True)
    assert (ran.steps_done, ran.resume_step, ran.steps_lost) == (170, 160, 10)


def test_the_report_that_starts_a_restarted_run_measures_nothing(report, running, gpus):
    """Its start is not known then: the agent reports a job as it starts it."""
    move(running, gpus[1])
    report(tick(running.pk, "preempted", steps=150, checkpoint=100, exit_code=75))
    assert report(tick(running.pk, steps=130, checkpoint=100, steps_per_s=10.0)).json()["state"] == "running"
    stop = JobInterruption.objects.get(job=running)
    assert (stop.overhead_s, stop.resumed_at) == (None, None)


def preempt(job):
    """A round preempts `job` (services._apply with a reason for it)."""
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    plan = opt.Plan(solver="ilp", placements={}, reasons={str(job.pk): "Room for others."}, power_w=0.0,
                    objective=0.0, status="optimal", energy_weight=1.0, load=0.0)
    services._apply(plan, run, timezone.now())


def test_a_preempted_job_waiting_to_be_placed_again_keeps_the_checkpoint_its_run_made_while_stopping(
        report, running):
    preempt(running)
    response = report(tick(running.pk, "preempted", steps=175, checkpoint=175, exit_code=75))
    assert response.status_code == 200 and response.json()["state"] == "pending"
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.current_step, job.steps_lost, job.steps_done) == (
        175, 175, 175, 0, 175)
    assert job.handover_until <= timezone.now()
    stop = JobInterruption.objects.get(job=job)
    assert (stop.kind, stop.steps_done, stop.resume_step, stop.steps_lost) == ("preempted", 175, 175, 0)


def test_a_stop_reported_with_a_checkpoint_beyond_the_job_is_kept_without_it(report, running):
    preempt(running)
    response = report(tick(running.pk, "preempted", steps=1200, checkpoint=1100, exit_code=75))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.steps_lost, job.steps_done) == (100, 100, 1100, 1200)


@pytest.mark.parametrize("status", ["succeeded", "failed", "preempted"])
@pytest.mark.parametrize("checkpoint", [1100, 90])  # beyond the job's 1000 steps; older than its last
def test_an_end_or_stop_is_recorded_without_a_checkpoint_the_rules_refuse(report, running, status, checkpoint):
    """Refused, the job would stay running with no process: its agent settles a 400 and
    forgets the job."""
    response = report(tick(running.pk, status, steps=1200, checkpoint=checkpoint, exit_code=75))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert job.state == {"preempted": "pending"}.get(status, status)
    assert (job.checkpoint_step, job.checkpoint_path, job.steps_done) == (100, "/ckpt/100", 1200)


def test_the_stop_of_a_job_cancelled_meanwhile_is_409_and_stores_nothing(report, running, alice):
    preempt(running)
    services.job_cancel(job=running, by=alice)
    before = row(running)
    assert report(tick(running.pk, "preempted", steps=175, checkpoint=175, exit_code=75)).status_code == 409
    assert row(running) == before


def test_a_node_given_up_reports_the_stop_of_its_fenced_job_and_the_job_keeps_its_checkpoint(
        report, running, node1):
    """The agent fenced itself (no heartbeat answered) and stopped the job; the control plane
    had given the node up and requeued the job. The stop arrives when it can reach it again."""
    node_set_state(node=node1, state="down", reason="no heartbeat for 60 s")
    response = report(tick(running.pk, "preempted", steps=190, checkpoint=180, exit_code=75))
    assert response.status_code == 200 and response.json()["state"] == "pending"
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.steps_lost, job.handover_until) == (180, 180, 10, None)
    stop = JobInterruption.objects.get(job=job)
    assert (stop.kind, stop.steps_done, stop.resume_step, stop.steps_lost) == ("node_down", 190, 180, 10)


def test_a_stop_reported_after_the_hold_ended_keeps_the_checkpoint_the_next_run_may_have_started_from(
        report, running, node2_gpus):
    """node2's agent may have started the job from step 100 already: it is not told of 170, and
    its reports from 100 on are not refused."""
    move(running, node2_gpus[0])
    Job.objects.filter(pk=running.pk).update(handover_until=timezone.now() - timedelta(seconds=1))
    response = report(tick(running.pk, "preempted", steps=180, checkpoint=170, exit_code=75))
    assert response.status_code == 200
    job = Job.objects.get(pk=running.pk)
    assert (job.checkpoint_step, job.resume_step, job.current_step, job.steps_lost, job.steps_done) == (
        100, 100, 100, 80, 180)
    stop = JobInterruption.objects.get(job=job)
    assert (stop.steps_done, stop.resume_step, stop.steps_lost) == (180, 100, 80)
    holder = node2_gpus[0].node.agent
    assert report(tick(job.pk, steps=100, checkpoint=100), user=holder).json()["state"] == "running"
