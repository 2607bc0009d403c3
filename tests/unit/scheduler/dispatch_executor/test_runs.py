"""Phase 4: each run against what Slurm says of it, through the agent path's rules: started,
its GPUs read back, its output's progress and checkpoints, its end; each applied once."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.dispatch.executor_sync import executor_sync
from scheduler.dispatch.report_rules import record_steps
from scheduler.executors.base import CANCELLED, FAILED, NODE_FAIL, RUNNING, SUCCEEDED, RunStatus
from scheduler.models import ExecutorRun, Job, JobInterruption, JobMeasurement
from telemetry.models import Gpu


def submitted(slurm, place, **fields):
    job = place(**fields)
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get(job=job)
    return job, run


def write(run, *lines, end="\n"):
    with open(run.output_path, "a") as output:
        output.write("\n".join(lines) + end)


def test_a_run_slurm_started_makes_its_job_running_on_the_gpus_slurm_gave(slurm, place):
    job, run = submitted(slurm, place, indexes=(2, 3))
    slurm.set(run.external_id, state=RUNNING, native_state="RUNNING", gpu_indexes=(0, 3), started_at=1.7e9)
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "running" and job.state_reason == f"Started by Slurm (job {run.external_id})."
    assert sorted(job.allocations.filter(end__isnull=True).values_list("gpu__index", flat=True)) == [0, 3]
    run.refresh_from_db()
    assert run.state == "running" and run.gpu_indexes == [0, 3] and run.started_at.timestamp() == 1.7e9
    assert sync.stats["started"] == 1
    started_at = job.started_at
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.started_at == started_at and job.state == "running"


def test_new_whole_lines_of_its_output_are_progress_and_checkpoints(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    write(run, "loading", "GOGH_PROGRESS step=10 total=1000", "GOGH_CHECKPOINT step=10 path=/ckpt/10",
          "GOGH_PROGRESS step=12", "GOGH_PROGRESS step=1", end="")  # the last line is still being written
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.state, job.current_step, job.steps_done, job.checkpoint_step, job.checkpoint_path) == (
        "running", 12, 12, 10, "/ckpt/10")
    run.refresh_from_db()
    assert open(run.output_path, "rb").read()[run.output_offset:] == b"GOGH_PROGRESS step=1"
    write(run, "5 total=1000", "GOGH_CHECKPOINT step=15 path=/ckpt/15")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.current_step, job.checkpoint_step) == (15, 15)


def test_a_report_the_rules_refuse_stores_nothing(slurm, place):
    job, run = submitted(slurm, place)
    Job.objects.filter(pk=job.pk).update(checkpoint_step=100, checkpoint_path="/ckpt/100", current_step=100)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    write(run, "GOGH_PROGRESS step=50")
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.current_step, job.steps_done, job.checkpoint_step) == (100, 0, 100)
    assert sync.stats["reports_refused"] == 1


def test_a_run_not_started_yet_has_no_output_file_and_that_is_no_error(slurm, place):
    job, run = submitted(slurm, place)
    sync = executor_sync(executor=slurm)
    assert sync.ok and Job.objects.get(pk=job.pk).state == "placed"


def test_a_run_that_succeeded_ends_its_job_once(slurm, place):
    job, run = submitted(slurm, place)
    write(run, "GOGH_PROGRESS step=1000 total=1000")
    slurm.set(run.external_id, state=SUCCEEDED, native_state="COMPLETED", exit_code=0, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.state, job.steps_done) == ("succeeded", 1000)
    assert job.state_reason == "Exited with status 0 (Slurm COMPLETED)."
    assert not job.allocations.filter(end__isnull=True).exists()
    run.refresh_from_db()
    assert run.settled_at is not None and run.state == "succeeded"
    executor_sync(executor=slurm)
    assert Job.objects.get(pk=job.pk).finished_at == job.finished_at and slurm.launches[1:] == []


def test_a_run_that_failed_fails_its_job_with_slurms_words(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=FAILED, native_state="FAILED", reason="NonZeroExitCode", exit_code=3,
              gpu_indexes=(0,))
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.state, job.state_reason) == ("failed", "Exited with status 3 (Slurm FAILED, NonZeroExitCode)")


def test_exit_75_sends_the_job_back_to_pending_resuming_from_its_checkpoint(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    write(run, "GOGH_PROGRESS step=120 total=1000", "GOGH_CHECKPOINT step=100 path=/ckpt/100")
    executor_sync(executor=slurm)
    write(run, "GOGH_PROGRESS step=130", "GOGH_CHECKPOINT step=130 path=/ckpt/130")
    slurm.set(run.external_id, state=FAILED, native_state="FAILED", exit_code=75)
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "pending" and (job.checkpoint_step, job.resume_step, job.restarts) == (130, 130, 1)
    assert "resumes from its checkpoint at step 130" in job.pending_reason
    [stop] = JobInterruption.objects.filter(job=job)
    assert stop.kind == "stopped" and stop.was_running
    assert ExecutorRun.objects.get().settled_at is not None
    executor_sync(executor=slurm)
    assert JobInterruption.objects.filter(job=job).count() == 1


def test_node_fail_sends_the_job_back_to_pending_exactly_once(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    slurm.set(run.external_id, state=NODE_FAIL, native_state="NODE_FAIL")
    executor_sync(executor=slurm)
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "pending" and job.restarts == 1
    assert "Its node failed under it" in job.pending_reason
    assert list(JobInterruption.objects.filter(job=job).values_list("kind", flat=True)) == ["node_down"]


def test_a_run_slurm_no_longer_knows_sends_its_job_back_to_pending_once(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    del slurm.runs[run.external_id]
    executor_sync(executor=slurm)
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "pending" and "Slurm no longer knows its run" in job.pending_reason
    assert JobInterruption.objects.filter(job=job).count() == 1
    run.refresh_from_db()
    assert run.settled_at is not None and run.reason == "The executor no longer knows this run."


def test_a_run_cancelled_in_slurm_by_someone_else_cancels_its_job(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=CANCELLED, native_state="CANCELLED")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "cancelled" and "not by GOGH" in job.state_reason


def test_a_foreign_run_holding_gpus_is_handed_to_the_inventory_as_a_holder(slurm, place, node):
    slurm.runs["77"] = RunStatus(external_id="77", job_id=None, state=RUNNING, node="n-v100", gpu_indexes=(1,),
                                 user="someone-else")
    sync = executor_sync(executor=slurm)
    assert Gpu.objects.get(node=node, index=1).external_holder.startswith("Slurm job 77 of someone-else")
    assert sync.stats["foreign_gpus"] == 1
    del slurm.runs["77"]
    executor_sync(executor=slurm)
    assert Gpu.objects.get(node=node, index=1).external_holder == ""


def test_a_run_ended_before_the_sync_that_saw_it_start_is_applied_whole(slurm, place):
    job, run = submitted(slurm, place)
    write(run, "GOGH_PROGRESS step=1000 total=1000")
    slurm.set(run.external_id, state=SUCCEEDED, native_state="COMPLETED", exit_code=0, gpu_indexes=(0,),
              started_at=timezone.now().timestamp() - 5)
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "succeeded" and job.started_at is not None


def test_a_running_jobs_progress_lines_alone_are_stored_in_one_batch_with_the_same_rules(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    write(run, "GOGH_PROGRESS step=10 total=1000", "GOGH_CHECKPOINT step=10 path=/ckpt/10")
    executor_sync(executor=slurm)
    write(run, "GOGH_PROGRESS step=40", "GOGH_PROGRESS step=55")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    run.refresh_from_db()
    assert (job.current_step, job.steps_done, job.checkpoint_step) == (55, 55, 10)
    assert run.output_offset == len(open(run.output_path, "rb").read())
    write(run, "GOGH_PROGRESS step=5")  # below the checkpoint: refused, nothing stored, the line passed over
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert (job.current_step, job.steps_done) == (55, 55) and sync.stats["reports_refused"] == 1
    assert ExecutorRun.objects.get().output_offset == len(open(run.output_path, "rb").read())


def test_progress_read_for_a_job_a_round_moved_meanwhile_is_not_stored(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    Job.objects.filter(pk=job.pk).update(state="pending", pending_reason="Preempted.", current_step=0)
    record_steps({job.pk: 70})
    job.refresh_from_db()
    assert (job.current_step, job.steps_done) == (0, 0)


def test_a_run_that_failed_before_it_started_fails_its_job_without_starting_it(slurm, place):
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=FAILED, native_state="FAILED", reason="launch failed requeued held", exit_code=1)
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "failed" and job.started_at is None
    assert job.state_reason == "Exited with status 1 (Slurm FAILED, launch failed requeued held)"


def test_the_throughput_between_two_syncs_progress_becomes_a_catalog_measurement(slurm, place, settings):
    settings.GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S = 60
    job, run = submitted(slurm, place)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    start = timezone.now()
    write(run, "GOGH_PROGRESS step=100 total=100000")
    executor_sync(executor=slurm, now=start)
    write(run, "GOGH_PROGRESS step=400")
    executor_sync(executor=slurm, now=start + timedelta(seconds=30))  # within the interval: progress only
    assert not JobMeasurement.objects.exists()
    write(run, "GOGH_PROGRESS step=700")
    executor_sync(executor=slurm, now=start + timedelta(seconds=60))
    [link] = JobMeasurement.objects.filter(job=job).select_related("measurement__gpu_type")
    measurement = link.measurement
    assert measurement.throughput == pytest.approx(10.0) and measurement.source == "telemetry"
    assert (measurement.gpu_type.name, measurement.num_gpus) == ("v100", 1)
    assert Job.objects.get(pk=job.pk).current_step == 700
    run.refresh_from_db()
    assert (run.rate_step, run.rate_at) == (700, start + timedelta(seconds=60))
