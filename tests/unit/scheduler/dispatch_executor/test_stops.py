"""Phase 5: a run whose job left its node is stopped as the job contract says (notice, then the
kill after the job's grace period), and the job's next run goes out only once it has settled."""
from datetime import timedelta

from django.utils import timezone

from scheduler import services
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.base import CANCELLED, FAILED, RESUME_EXIT_CODE, RUNNING
from scheduler.models import ExecutorRun, Job, SolveRun
from scheduler.optimizer import problem as opt
from telemetry.models import Gpu


def running(slurm, place, **fields):
    job = place(**fields)
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get(job=job)
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=tuple(fields.get("indexes", (0,))))
    executor_sync(executor=slurm)
    with open(run.output_path, "a") as output:
        output.write("GOGH_PROGRESS step=200 total=1000\nGOGH_CHECKPOINT step=150 path=/ckpt/150\n")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "running"
    return job, run


def move(job, gpu):
    """A round moves `job` to `gpu` (services._apply, as a scheduling round applies a decision)."""
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    placement = opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                              partners=(), predicted_throughput=5.0, predicted_power_w=180.0)
    plan = opt.Plan(solver="ilp", placements={str(job.pk): placement}, reasons={}, power_w=180.0, objective=1.0,
                    status="optimal", energy_weight=1.0, load=0.0)
    services._apply(plan, run, timezone.now())


def test_a_moved_job_gets_the_notice_then_the_kill_and_its_next_run_waits_for_the_last(slurm, place, node):
    job, run = running(slurm, place, preemption_grace_s=30)
    move(job, Gpu.objects.get(node=node, index=2))
    executor_sync(executor=slurm)
    assert slurm.signals == [(run.external_id, False)] and len(slurm.launches) == 1
    run.refresh_from_db()
    assert run.stop_requested_at is not None and run.kill_at == run.stop_requested_at + timedelta(seconds=30)
    assert run.stop_reason.startswith("Placed by solve")
    executor_sync(executor=slurm)  # within its grace: nothing more
    assert len(slurm.signals) == 1 and len(slurm.launches) == 1
    executor_sync(executor=slurm, now=run.kill_at + timedelta(seconds=1))
    assert slurm.signals[-1] == (run.external_id, True) and len(slurm.launches) == 1

    with open(run.output_path, "a") as output:
        output.write("GOGH_PROGRESS step=230\nGOGH_CHECKPOINT step=230 path=/ckpt/230\n")
    slurm.set(run.external_id, state=FAILED, native_state="FAILED", exit_code=RESUME_EXIT_CODE)
    executor_sync(executor=slurm, now=run.kill_at + timedelta(seconds=2))
    run.refresh_from_db()
    job.refresh_from_db()
    assert run.settled_at is not None
    assert (job.state, job.checkpoint_step, job.resume_step) == ("placed", 230, 230)
    assert [launch.job_id for launch in slurm.launches] == [job.pk, job.pk]
    assert slurm.launches[1].environment["GOGH_RESUME_CHECKPOINT"] == "/ckpt/230"
    assert ExecutorRun.objects.filter(job=job, settled_at__isnull=True).get().external_id == "1001"


def test_a_run_moved_before_it_started_is_cancelled_at_once(slurm, place, node):
    job = place()
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get(job=job)
    move(job, Gpu.objects.get(node=node, index=2))
    executor_sync(executor=slurm)
    assert slurm.signals == [(run.external_id, True)]
    slurm.set(run.external_id, state=CANCELLED, native_state="CANCELLED")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "placed" and len(slurm.launches) == 2 and job.restarts == 0


def test_a_job_cancelled_by_its_owner_gets_the_notice_and_its_run_settles(slurm, place, alice):
    job, run = running(slurm, place)
    services.job_cancel(job=job, by=alice)
    executor_sync(executor=slurm)
    assert slurm.signals == [(run.external_id, False)]
    slurm.set(run.external_id, state=CANCELLED, native_state="CANCELLED")
    executor_sync(executor=slurm)
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.state == "cancelled" and job.state_reason == "Cancelled by alice."
    assert run.settled_at is not None and len(slurm.launches) == 1


def test_a_signal_slurm_refuses_is_recorded_and_tried_again(slurm, place, alice):
    job, run = running(slurm, place)
    services.job_cancel(job=job, by=alice)
    failing = slurm.signal

    def refuse(external_id, *, kill):
        from scheduler.executors.base import ExecutorError
        raise ExecutorError("scancel --signal=TERM --full", "Socket timed out")

    slurm.signal = refuse
    sync = executor_sync(executor=slurm)
    assert not sync.ok and sync.command == "scancel --signal=TERM --full"
    assert ExecutorRun.objects.get(pk=run.pk).stop_requested_at is None
    slurm.signal = failing
    executor_sync(executor=slurm)
    assert slurm.signals == [(run.external_id, False)]
    assert Job.objects.get(pk=job.pk).state == "cancelled"
