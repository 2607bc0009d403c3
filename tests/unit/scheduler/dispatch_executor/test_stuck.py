"""Phase 4b: a placed job whose run Slurm keeps waiting past GOGH_SLURM_PENDING_TIMEOUT_S goes
back to pending with Slurm's reason; the run is cancelled (it never started); nothing of the
job's work is counted lost."""
from datetime import timedelta

from django.utils import timezone

from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.base import RUNNING
from scheduler.models import ExecutorRun, Job, JobInterruption


def waiting(slurm, place, *, seconds: float, reason: str = "ReqNodeNotAvail, Reserved for maintenance"):
    job = place()
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get(job=job)
    slurm.set(run.external_id, reason=reason)
    then = timezone.now() - timedelta(seconds=seconds)
    Job.objects.filter(pk=job.pk).update(placed_at=then)  # a run is current when submitted after the placing
    ExecutorRun.objects.filter(pk=run.pk).update(submitted_at=then)
    return job, run


def test_a_run_kept_waiting_past_the_timeout_sends_its_job_back_to_pending_and_is_cancelled(slurm, place):
    job, run = waiting(slurm, place, seconds=301)
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "pending"
    assert job.pending_reason.startswith(f"Slurm kept its run {run.external_id} waiting 301 s on n-v100 "
                                         "(ReqNodeNotAvail, Reserved for maintenance)")
    assert not job.allocations.filter(end__isnull=True).exists()
    assert sync.stats["stuck"] == 1 and sync.stats["killed"] == 1
    assert slurm.signals == [(run.external_id, True)]  # cancelled at once: it never started
    assert not JobInterruption.objects.filter(job=job).exists() and job.restarts == 0


def test_it_happens_once_the_next_syncs_only_wait_for_the_cancel_to_land(slurm, place):
    job, run = waiting(slurm, place, seconds=400)
    executor_sync(executor=slurm)
    second = executor_sync(executor=slurm)
    assert "stuck" not in second.stats
    assert slurm.signals == [(run.external_id, True)]
    job.refresh_from_db()
    assert job.state == "pending"


def test_a_run_within_the_timeout_stays_placed_and_untouched(slurm, place):
    job, run = waiting(slurm, place, seconds=299)
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "placed" and job.allocations.filter(end__isnull=True).count() == 1
    assert "stuck" not in sync.stats and slurm.signals == []


def test_a_run_that_started_is_never_taken_for_stuck(slurm, place):
    job, run = waiting(slurm, place, seconds=3600)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "running" and slurm.signals == []


def test_the_timeout_is_the_setting(slurm, place, slurm_settings):
    slurm_settings["pending_timeout_s"] = 30
    job, run = waiting(slurm, place, seconds=31, reason="")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "pending" and "waiting 31 s on n-v100 (PENDING)" in job.pending_reason
