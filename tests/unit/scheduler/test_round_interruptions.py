"""Every move and preemption a round applies, and every job requeued from a lost node or GPU,
is recorded as an interruption with its reason and the work it lost, and charged to the job
(restarts, steps lost, where its next run resumes); a round's apply stays batched."""
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler import services
from scheduler.dispatch.requeue import jobs_requeue_from_gpus, jobs_requeue_from_nodes
from scheduler.interruptions import HANDOVER_MARGIN
from scheduler.models import Allocation, Job, JobInterruption, SolveRun

from .test_round_apply_batched import decision, hold, make_job, place


def at_step(job, current, checkpoint=None, **fields):
    Job.objects.filter(pk=job.pk).update(current_step=current, steps_done=current, checkpoint_step=checkpoint,
                                         **fields)
    return Job.objects.get(pk=job.pk)


def apply(choice):
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services._apply(choice, run, timezone.now())
    return run


def test_a_preempted_running_job_names_the_higher_priority_job_given_its_gpu(cluster, alice, resnet50):
    victim = at_step(make_job(alice, resnet50, "running"), 900, 600)
    hold(victim, cluster[0], start=timezone.now() - timedelta(hours=1))
    urgent, elsewhere, equal = (make_job(alice, resnet50) for _ in range(3))
    Job.objects.filter(pk=urgent.pk).update(priority=5)
    Job.objects.filter(pk=elsewhere.pk).update(priority=3)
    before = timezone.now()
    run = apply(decision([place(Job.objects.get(pk=urgent.pk), cluster[0]),
                          place(Job.objects.get(pk=elsewhere.pk), cluster[1]), place(equal, cluster[2])],
                         {str(victim.pk): "Room for priority 5."}))
    reason = f"Preempted by solve {run.pk}: room for higher-priority job {urgent.pk} (priority 5)."
    job = Job.objects.get(pk=victim.pk)
    assert (job.state, job.pending_reason) == ("pending", reason)
    (stop,) = JobInterruption.objects.filter(job=job)
    assert (stop.kind, stop.reason, stop.solve_run, stop.was_running) == ("preempted", reason, run, True)
    assert (stop.steps_done, stop.resume_step, stop.steps_lost) == (900, 600, 300)
    assert (job.restarts, job.steps_lost, job.resume_step, job.current_step, job.steps_done) == (1, 300, 600, 600, 900)
    grace = timedelta(seconds=60) + HANDOVER_MARGIN
    assert before + grace <= job.handover_until <= timezone.now() + grace


def test_without_higher_priority_newcomers_a_preemption_gives_the_solvers_reason(cluster, alice, resnet50):
    victim = make_job(alice, resnet50, "running")
    hold(victim, cluster[0])
    newcomer = make_job(alice, resnet50)  # the same priority: not why
    run = apply(decision([place(newcomer, cluster[0])], {str(victim.pk): "No GPU type reaches T_min."}))
    assert JobInterruption.objects.get(job=victim).reason == f"Preempted by solve {run.pk}: No GPU type reaches T_min."


def test_higher_priority_jobs_admitted_elsewhere_are_named_when_none_took_its_gpus(cluster, alice, resnet50):
    victim = make_job(alice, resnet50, "running")
    hold(victim, cluster[0])
    first, second = make_job(alice, resnet50), make_job(alice, resnet50)
    Job.objects.filter(pk=first.pk).update(priority=2)
    Job.objects.filter(pk=second.pk).update(priority=4)
    run = apply(decision([place(first, cluster[1]), place(second, cluster[2])], {str(victim.pk): "Room."}))
    assert JobInterruption.objects.get(job=victim).reason == (
        f"Preempted by solve {run.pk}: room for higher-priority jobs {second.pk} (priority 4), "
        f"{first.pk} (priority 2).")


def test_a_moved_running_job_is_recorded_with_where_it_went_and_the_power_predicted(cluster, alice, resnet50):
    job = at_step(make_job(alice, resnet50, "running"), 500)  # never checkpointed: loses it all
    Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now(), predicted_power_w=240.0)
    run = apply(decision([place(job, cluster[4])]))  # predicted 100 W on a K80
    (stop,) = JobInterruption.objects.filter(job=job)
    assert stop.reason == f"Moved by solve {run.pk} to k80-a GPU 0 (k80): predicted 100 W instead of 240 W."
    assert (stop.kind, stop.was_running, stop.steps_done, stop.resume_step, stop.steps_lost) == (
        "moved", True, 500, 0, 500)
    job = Job.objects.get(pk=job.pk)
    assert (job.state, job.restarts, job.steps_lost, job.current_step, job.steps_done) == ("placed", 1, 500, 0, 500)
    assert job.handover_until is not None


def test_a_placed_job_moved_before_it_started_loses_nothing(cluster, alice, resnet50):
    job = make_job(alice, resnet50, "placed")
    hold(job, cluster[0])
    apply(decision([place(job, cluster[1])]))
    (stop,) = JobInterruption.objects.filter(job=job)
    assert (stop.kind, stop.was_running, stop.steps_lost) == ("moved", False, 0)
    job = Job.objects.get(pk=job.pk)
    assert (job.restarts, job.steps_lost, job.handover_until) == (0, 0, None)


def test_a_job_that_keeps_its_gpus_or_only_changes_partners_is_not_interrupted(cluster, alice, resnet50, lm):
    kept, survivor, joiner = make_job(alice, resnet50, "running"), make_job(alice, lm, "running"), make_job(alice, lm)
    hold(kept, cluster[0])
    hold(survivor, cluster[1])
    apply(decision([place(kept, cluster[0]), place(survivor, cluster[1], [joiner]),
                    place(joiner, cluster[1], [survivor])]))
    assert not JobInterruption.objects.exists()
    assert Job.objects.filter(restarts__gt=0).count() == 0


def test_interruptions_keep_a_rounds_apply_batched(alice, resnet50, cluster):
    """Moving and preempting twice as many running jobs takes no more queries."""
    def queries_to_interrupt(count):
        jobs = [at_step(make_job(alice, resnet50, "running"), 40 + n, 10) for n in range(2 * count)]
        for job in jobs:
            hold(job, cluster[0])
        moves, preemptions = jobs[:count], jobs[count:]
        choice = decision([place(job, cluster[1]) for job in moves], {str(job.pk): "Room." for job in preemptions})
        run = SolveRun.objects.create(solver="ilp", trigger="manual")
        with CaptureQueriesContext(connection) as queries:
            services._apply(choice, run, timezone.now())
        assert JobInterruption.objects.filter(solve_run=run).count() == 2 * count
        assert Job.objects.filter(pk__in=[j.pk for j in jobs], restarts=1).count() == 2 * count
        return len(queries)

    assert queries_to_interrupt(2) == queries_to_interrupt(6)


def test_a_node_down_and_a_failed_gpu_are_recorded_with_their_reason(alice, resnet50, cluster):
    on_node = at_step(make_job(alice, resnet50, "running"), 300, 250)
    hold(on_node, cluster[4])
    on_gpu = make_job(alice, resnet50, "placed")
    hold(on_gpu, cluster[1])
    jobs_requeue_from_nodes(node_ids=[cluster[4].node_id], reason="no heartbeat for 60 s")
    jobs_requeue_from_gpus(gpu_ids=[cluster[1].pk], reason="XID 79")
    down = JobInterruption.objects.get(job=on_node)
    assert (down.kind, down.reason, down.was_running, down.steps_lost, down.resume_step) == (
        "node_down", "Node k80-a went down: no heartbeat for 60 s", True, 50, 250)
    failed = JobInterruption.objects.get(job=on_gpu)
    assert (failed.kind, failed.reason, failed.was_running, failed.steps_lost) == (
        "gpu_failed", "GPU failure: XID 79", False, 0)
    job = Job.objects.get(pk=on_node.pk)
    assert (job.state, job.restarts, job.steps_lost, job.current_step, job.handover_until) == ("pending", 1, 50, 250,
                                                                                              None)
    assert Job.objects.get(pk=on_gpu.pk).restarts == 0
    jobs_requeue_from_nodes(node_ids=[cluster[4].node_id], reason="again")
    assert JobInterruption.objects.count() == 2  # exactly once
