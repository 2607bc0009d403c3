"""Phase 2: a run named for a GOGH job that GOGH has no record of (the worker died between sbatch
and the commit of its row) is adopted where its job is placed, else killed: the job never runs
twice, and a run another sync recorded meanwhile is left alone."""
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.base import PENDING, RUNNING, RunStatus
from scheduler.models import ExecutorRun, Job
from scheduler.services import job_cancel


def _lost_submit(slurm, job, *, node="n-v100", state=RUNNING, external_id="77"):
    """Slurm runs the job's run, GOGH has no row for it (as after a worker killed mid-submit)."""
    slurm.runs[external_id] = RunStatus(external_id=external_id, job_id=job.pk, state=state, node=node,
                                        gpu_indexes=(0,) if state == RUNNING else (), native_state=state.upper())


def test_a_run_whose_record_was_lost_is_adopted_not_submitted_again(slurm, place, slurm_settings):
    job = place()
    _lost_submit(slurm, job)
    sync = executor_sync(executor=slurm)
    assert sync.ok and sync.stats["adopted"] == 1 and "submitted" not in sync.stats
    assert slurm.launches == [] and slurm.signals == []  # not run twice, not killed
    run = ExecutorRun.objects.get(job=job)
    assert (run.external_id, run.node.hostname, run.gpu_type, run.num_gpus) == ("77", "n-v100", "v100", 1)
    assert run.output_path == str(slurm_settings["output_dir"] / f"job-{job.pk}-run-1.out")
    assert sync.stats["foreign_gpus"] == 0  # its GPU is GOGH's job's, not someone else's

    again = executor_sync(executor=slurm)  # from now on followed like any run it submitted
    assert "adopted" not in again.stats and ExecutorRun.objects.count() == 1 and slurm.launches == []
    job.refresh_from_db()
    assert job.state == "running" and ExecutorRun.objects.get(job=job).state == "running"


def test_a_waiting_run_whose_record_was_lost_is_adopted(slurm, place):
    job = place()
    _lost_submit(slurm, job, node=None, state=PENDING)
    assert executor_sync(executor=slurm).stats["adopted"] == 1
    assert slurm.launches == [] and ExecutorRun.objects.get(job=job).external_id == "77"


def test_a_lost_run_of_a_job_that_moved_on_is_killed_and_nothing_recorded(slurm, place, alice):
    job = place()
    job_cancel(job=job, by=alice)
    _lost_submit(slurm, job)
    sync = executor_sync(executor=slurm)
    assert sync.stats["orphans_killed"] == 1 and slurm.signals == [("77", True)]
    assert not ExecutorRun.objects.exists() and Job.objects.get(pk=job.pk).state == "cancelled"


def test_a_lost_run_on_another_node_than_its_job_is_killed_and_the_job_submitted(slurm, place):
    job = place()
    _lost_submit(slurm, job, node="n-k80")
    sync = executor_sync(executor=slurm)
    assert sync.stats["orphans_killed"] == 1 and slurm.signals == [("77", True)]
    assert sync.stats["submitted"] == 1 and [launch.job_id for launch in slurm.launches] == [job.pk]
    assert list(ExecutorRun.objects.values_list("external_id", flat=True)) == ["1000"]


def test_a_recorded_run_is_neither_adopted_nor_killed(slurm, place):
    place()
    executor_sync(executor=slurm)
    slurm.set("1000", state=RUNNING, gpu_indexes=(0,))
    sync = executor_sync(executor=slurm)
    assert "adopted" not in sync.stats and "orphans_killed" not in sync.stats and slurm.signals == []
