"""Phase 6: placed jobs reach Slurm once, as the round placed them, with the job contract's
environment; a refusal sends that job back to pending with Slurm's words, and the others go on."""
from django.utils import timezone

from scheduler.dispatch.executor_sync import executor_sync
from scheduler.models import ExecutorRun, ExecutorSync, Job


def test_a_placed_job_is_submitted_once_with_its_placement_and_contract(slurm, place, slurm_settings):
    job = place(indexes=(1, 2), preemption_grace_s=45)
    sync = executor_sync(executor=slurm)
    assert sync.ok and sync.stats["submitted"] == 1
    [launch] = slurm.launches
    placement = (launch.job_id, launch.node, launch.gpu_type, launch.num_gpus, launch.shares)
    assert placement == (job.pk, "n-v100", "v100", 2, None)
    assert (launch.command, launch.account, launch.grace_s) == ("python train.py", "acct-research", 45)
    checkpoints = slurm_settings["checkpoint_dir"] / f"job-{job.pk}"
    assert launch.environment == {
        "EPOCHS": "3", "GOGH_JOB_ID": str(job.pk), "GOGH_RESUME_STEP": "0", "GOGH_RESUME_CHECKPOINT": "",
        "GOGH_CHECKPOINT_DIR": str(checkpoints), "GOGH_PREEMPT_GRACE_S": "45",
    }
    assert checkpoints.is_dir()
    assert launch.output_path == str(slurm_settings["output_dir"] / f"job-{job.pk}-run-1.out")
    run = ExecutorRun.objects.get(job=job)
    assert (run.external_id, run.node.hostname, run.gpu_type, run.num_gpus, run.state) == ("1000", "n-v100", "v100", 2,
                                                                                          "pending")
    assert run.settled_at is None and run.output_path == launch.output_path

    again = executor_sync(executor=slurm)
    assert len(slurm.launches) == 1 and "submitted" not in again.stats
    assert ExecutorRun.objects.count() == 1 and slurm.waited_on == ["1000"]


def test_a_resumed_job_is_told_its_checkpoint(slurm, place):
    job = place()
    Job.objects.filter(pk=job.pk).update(checkpoint_step=300, checkpoint_path="/ckpt/300", current_step=300)
    executor_sync(executor=slurm)
    environment = slurm.launches[0].environment
    assert (environment["GOGH_RESUME_STEP"], environment["GOGH_RESUME_CHECKPOINT"]) == ("300", "/ckpt/300")


def test_a_co_located_pair_gets_a_share_of_one_gpu_each(slurm, place):
    first = place(indexes=(3,))
    second = place(indexes=(3,), partners=[first])
    first.allocations.get().partners.set([second])
    executor_sync(executor=slurm)
    assert sorted((launch.job_id, launch.shares, launch.num_gpus) for launch in slurm.launches) == [
        (first.pk, 1, 1), (second.pk, 1, 1)]


def test_a_job_in_handover_waits(slurm, place):
    job = place()
    Job.objects.filter(pk=job.pk).update(handover_until=timezone.now() + timezone.timedelta(seconds=60))
    executor_sync(executor=slurm)
    assert slurm.launches == [] and not ExecutorRun.objects.exists()


def test_a_refused_submit_sends_that_job_back_to_pending_and_the_others_go_on(slurm, place):
    refused, other = place(indexes=(0,)), place(indexes=(1,))
    slurm.refuse = {refused.pk}
    sync = executor_sync(executor=slurm)
    refused.refresh_from_db()
    assert refused.state == "pending"
    assert refused.pending_reason == ("Slurm refused the job: sbatch --parsable: Invalid account or "
                                      "account/partition combination")
    assert not refused.allocations.filter(end__isnull=True).exists()
    assert [launch.job_id for launch in slurm.launches] == [other.pk]
    assert ExecutorRun.objects.get().job_id == other.pk
    assert not sync.ok and sync.command == "sbatch --parsable" and "Invalid account" in sync.error
    assert sync.stats["refused"] == 1 and sync.stats["submitted"] == 1
    assert ExecutorSync.objects.count() == 1


def test_a_copy_submitted_by_a_sync_that_lost_the_race_is_cancelled(slurm, place, monkeypatch):
    """Two syncs at once may both submit a job: the database keeps one unsettled run per job,
    so the second copy is cancelled in Slurm and nothing of it is stored."""
    job = place()
    real = slurm.submit

    def racing(launch):
        external_id = real(launch)
        ExecutorRun.objects.create(job_id=launch.job_id, executor="slurm", external_id="999",
                                   submitted_at=timezone.now())
        return external_id

    monkeypatch.setattr(slurm, "submit", racing)
    executor_sync(executor=slurm)
    assert slurm.signals == [("1000", True)]
    assert list(ExecutorRun.objects.filter(job=job).values_list("external_id", flat=True)) == ["999"]
