"""The Django shell of keep_work: what a placed or running job would lose, read from the
database into its JobSpec (problem_source.running_work), and the two selectors it uses."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement, Workload
from scheduler import services
from scheduler.models import Allocation, InterruptionKind, Job, JobInterruption, JobMeasurement, SolverConfig
from scheduler.problem_source import problem_from_database, running_work
from scheduler.selectors import RESTART_OVERHEAD_SAMPLES, moves_so_far, preemptions_last_hour, restart_overheads


def submit(owner, workload, priority=0, total_steps=None):
    return services.job_submit(owner=owner, workload=workload, min_throughput=8.0, max_gpus=1, priority=priority,
                               total_steps=total_steps).job


def interrupt(job, kind, at, overhead_s=None):
    return JobInterruption.objects.create(job=job, kind=kind, reason="test", at=at, was_running=True,
                                          overhead_s=overhead_s)


def running(job, *, step, checkpoint, placed_ago_s):
    """The job running since it was placed `placed_ago_s` ago (its open allocation began then)."""
    placed_at = timezone.now() - timedelta(seconds=placed_ago_s)
    Job.objects.filter(pk=job.pk).update(state="running", current_step=step, steps_done=step,
                                         checkpoint_step=checkpoint, placed_at=placed_at)
    Allocation.objects.filter(job=job, end__isnull=True).update(start=placed_at)


def spec_of(problem, job):
    return next(spec for spec in problem.jobs if spec.id == str(job.pk))


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_a_running_job_carries_what_a_move_would_throw_away(measured, alice, resnet50):
    """100 steps since the checkpoint at 10 steps/s (the allocation's prediction) = 10 s, + 30 s
    catalog restart overhead = 40 s at 300 W = 12000 J over 2000 steps left (200 s) x 1.2 + 50 W."""
    job = submit(alice, resnet50, priority=1, total_steps=2500)
    services.scheduling_round_run(trigger="manual")
    waiting = submit(alice, resnet50, priority=1)
    running(job, step=500, checkpoint=400, placed_ago_s=7200)
    problem = problem_from_database(SolverConfig.load())
    spec = spec_of(problem, job)
    assert spec.priority == 3 and spec_of(problem, waiting).priority == 2
    assert spec.move_penalty_w == pytest.approx(12000 / 200 * 1.2 + 50)
    assert spec.work_at_risk == pytest.approx(40.0) and not spec.pinned
    assert running_work([Job.objects.get(pk=job.pk)])[job.pk].checkpointed
    assert spec_of(problem, waiting).move_penalty_w is None and spec_of(problem, waiting).work_at_risk == 0.0


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_rate_power_cool_down_preemptions_and_moves_come_from_the_job_and_its_allocations(measured, alice, resnet50):
    job = submit(alice, resnet50, total_steps=2500)
    services.scheduling_round_run(trigger="manual")
    running(job, step=500, checkpoint=None, placed_ago_s=60)
    now = timezone.now()
    interrupt(job, InterruptionKind.PREEMPTED, now - timedelta(minutes=30))
    interrupt(job, InterruptionKind.PREEMPTED, now - timedelta(hours=2))
    interrupt(job, InterruptionKind.MOVED, now - timedelta(minutes=5))
    gpu = Allocation.objects.get(job=job).gpu
    for seconds_ago, throughput in ((3600, 99.0), (10, 12.5)):  # one measured before it was placed, one since
        m = Measurement.objects.create(workload=resnet50, gpu_type=gpu.gpu_type, num_gpus=1, throughput=throughput,
                                       source="telemetry", observed_at=now - timedelta(seconds=seconds_ago))
        JobMeasurement.objects.create(job=job, measurement=m)
    work = running_work([Job.objects.select_related("workload").get(pk=job.pk)], now=now)[job.pk]
    assert (work.steps_since_checkpoint, work.remaining_steps, work.steps_per_s) == (500, 2000, 12.5)
    assert (work.power_w, work.num_gpus, work.restart_overhead_s, work.running) == (300.0, 1, 30.0, True)
    assert work.placed_s_ago == pytest.approx(60, abs=5) and work.preemptions_last_hour == 1 and work.moves == 1
    assert not work.checkpointed  # no checkpoint yet: a stop throws away all of its 500 steps
    assert spec_of(problem_from_database(SolverConfig.load()), job).pinned  # placed a minute ago


@pytest.mark.usefixtures("default_power_limits")
def test_its_measurements_are_those_since_its_open_allocation_began(measured, alice, resnet50):
    """A partner joining (or leaving) reopens the allocation on the same GPU (services.change_partners):
    the rate measured before was measured beside other partners, and keep_work.below_tmin reads
    only what it measures where it runs now."""
    job = submit(alice, resnet50, total_steps=2500)
    services.scheduling_round_run(trigger="manual")
    running(job, step=500, checkpoint=400, placed_ago_s=3600)
    now = timezone.now()
    gpu = Allocation.objects.get(job=job).gpu
    Allocation.objects.filter(job=job).update(end=now - timedelta(seconds=60))
    Allocation.objects.create(job=job, gpu=gpu, start=now - timedelta(seconds=60))
    for seconds_ago, throughput in ((600, 12.5), (120, 12.0), (30, 7.0), (10, 7.5)):
        m = Measurement.objects.create(workload=resnet50, gpu_type=gpu.gpu_type, num_gpus=1, throughput=throughput,
                                       source="telemetry", observed_at=now - timedelta(seconds=seconds_ago))
        JobMeasurement.objects.create(job=job, measurement=m)
    work = running_work([Job.objects.select_related("workload").get(pk=job.pk)], now=now)[job.pk]
    assert (work.measured.count, work.measured.mean, work.steps_per_s) == (2, pytest.approx(7.25), 7.5)


def test_restart_overhead_is_the_median_of_the_last_measured_restarts_else_the_catalog_default(
    measured, alice, resnet50, lm
):
    job = submit(alice, resnet50)
    now = timezone.now()
    interrupt(job, InterruptionKind.MOVED, now - timedelta(days=1), overhead_s=500.0)  # older than the last 20
    for n in range(RESTART_OVERHEAD_SAMPLES):
        interrupt(job, InterruptionKind.MOVED, now - timedelta(minutes=n), overhead_s=[10.0, 20.0, 90.0][n % 3])
    interrupt(job, InterruptionKind.MOVED, now, overhead_s=None)  # not measured yet
    Workload.objects.filter(pk=lm.pk).update(restart_overhead_s=45.0)
    assert restart_overheads({resnet50.name, lm.name, "nothing"}) == {resnet50.name: 20.0, lm.name: 45.0}


def test_preemptions_are_counted_per_job_over_the_last_hour_only(measured, alice, resnet50):
    one, other = submit(alice, resnet50), submit(alice, resnet50)
    now = timezone.now()
    for minutes in (5, 59):
        interrupt(one, InterruptionKind.PREEMPTED, now - timedelta(minutes=minutes))
    interrupt(one, InterruptionKind.PREEMPTED, now - timedelta(minutes=61))
    interrupt(other, InterruptionKind.NODE_DOWN, now - timedelta(minutes=5))
    assert preemptions_last_hour([one.pk, other.pk], now=now) == {one.pk: 2, other.pk: 0}


def test_a_higher_priority_job_preempts_the_placed_job_that_loses_least_work(measured, alice, resnet50):
    low = [submit(alice, resnet50, total_steps=100_000) for _ in range(4)]
    services.scheduling_round_run(trigger="manual")
    for n, job in enumerate(low):
        running(job, step=1000 + 500 * n, checkpoint=None, placed_ago_s=7200)  # the first loses least
    urgent = submit(alice, resnet50, priority=10)
    services.scheduling_round_run(trigger="submit")
    states = {job.pk: job.state for job in Job.objects.filter(pk__in=[j.pk for j in [*low, urgent]])}
    assert states == {low[0].pk: "pending", low[1].pk: "running", low[2].pk: "running", low[3].pk: "running",
                      urgent.pk: "placed"}


def test_moves_are_counted_per_job_over_its_life(measured, alice, resnet50):
    one, other = submit(alice, resnet50), submit(alice, resnet50)
    now = timezone.now()
    for days in (0, 3, 30):
        interrupt(one, InterruptionKind.MOVED, now - timedelta(days=days))
    interrupt(one, InterruptionKind.PREEMPTED, now)
    interrupt(other, InterruptionKind.GPU_FAILED, now)
    assert moves_so_far([one.pk, other.pk]) == {one.pk: 3, other.pk: 0}


@pytest.mark.usefixtures("default_power_limits")
def test_a_running_job_on_a_board_at_risk_leaves_it_at_its_checkpoint_in_its_cool_down(measured, alice, resnet50):
    """10 steps/s (the allocation's prediction): 100 steps since the checkpoint are 10 s of work, a
    move throws little away, so it leaves though it was placed a minute ago;
    7000 steps (700 s, above LEAVE_AT_RISK_S) and it stays, pinned. On a healthy board it stays."""
    job = submit(alice, resnet50, total_steps=20000)
    services.scheduling_round_run(trigger="manual")
    gpu = Allocation.objects.get(job=job).gpu
    running(job, step=500, checkpoint=400, placed_ago_s=60)
    healthy = spec_of(problem_from_database(SolverConfig.load()), job)
    assert healthy.current.gpu_ids == (str(gpu.pk),) and healthy.pinned
    type(gpu).objects.filter(pk=gpu.pk).update(health={"at_risk": "remapped rows rose from 0 to 1"})
    problem = problem_from_database(SolverConfig.load())
    assert next(g for g in problem.gpus if g.id == str(gpu.pk)).at_risk
    leaving = spec_of(problem, job)
    assert (leaving.leaving, leaving.pinned, leaving.priority) == (True, False, 1)
    running(job, step=7400, checkpoint=400, placed_ago_s=60)
    staying = spec_of(problem_from_database(SolverConfig.load()), job)
    assert not staying.leaving and staying.pinned


def test_a_job_measured_below_its_tmin_since_it_was_placed_is_marked_to_move(measured, alice, resnet50):
    """T_min 8.0, predicted at 10 on its V100; since it was placed its agent measured 7.0 +- 0.1 six
    times (one before, at 99, is not counted): surely below, so its measured rate plans it."""
    job = submit(alice, resnet50, total_steps=200_000)
    services.scheduling_round_run(trigger="manual")
    running(job, step=500, checkpoint=400, placed_ago_s=7200)
    gpu, now = Allocation.objects.get(job=job).gpu, timezone.now()
    for seconds_ago, throughput in ((9000, 99.0), *((60 * i, 7.0 + (-0.1) ** i) for i in range(1, 7))):
        m = Measurement.objects.create(workload=resnet50, gpu_type=gpu.gpu_type, num_gpus=1, throughput=throughput,
                                       source="telemetry", observed_at=now - timedelta(seconds=seconds_ago))
        JobMeasurement.objects.create(job=job, measurement=m)
    work = running_work([Job.objects.select_related("workload").get(pk=job.pk)], now=now)[job.pk]
    assert work.measured.count == 6 and work.measured.mean == pytest.approx(7.0 + sum((-0.1) ** i for i in
                                                                                        range(1, 7)) / 6)
    spec = spec_of(problem_from_database(SolverConfig.load()), job)
    assert spec.measured_throughput == pytest.approx(work.measured.mean) and spec.move_pays_at == 8.0


def test_a_board_at_risk_takes_no_new_job_and_is_not_counted_as_capacity(measured, alice, resnet50, cluster):
    """Three of the four V100s are at risk and nothing runs on them: the round counts one V100 and
    places one of two jobs there (a K80 gives 4 steps/s, below their T_min 8); the other waits."""
    from scheduler.optimizer.instance import compile_instance
    type(cluster[0]).objects.filter(pk__in=[g.pk for g in cluster[1:4]]).update(
        health={"at_risk": "remapped rows rose from 0 to 1"})
    first, second = submit(alice, resnet50), submit(alice, resnet50)
    assert compile_instance(problem_from_database(SolverConfig.load())).capacity["v100"].gpus == 1
    services.scheduling_round_run(trigger="manual")
    held = list(Allocation.objects.filter(end__isnull=True).values_list("job_id", "gpu_id"))
    assert held in ([(first.pk, cluster[0].pk)], [(second.pk, cluster[0].pk)])


@pytest.mark.parametrize("hours_of_work, kept", [(30, True), (1, False)])
def test_a_round_does_not_move_a_job_with_a_gpu_day_of_work_to_start_a_waiting_one(
        measured, alice, resnet50, lm, v100, hours_of_work, kept):
    """Four ResNet-50 jobs (T_min 5: only a V100 meets it) fill the four V100s; their T_min then
    falls to 3, which a K80 (4 steps/s) meets. An LM job of the same priority runs only on a
    V100. With `hours_of_work` of steps since their start (never checkpointed, 10 steps/s) a
    move throws away that much: 30 h keeps them (admission_keeps.py), and the LM job waits with
    the reason; 1 h moves one of them to a K80 for it."""
    Measurement.objects.create(workload=lm, gpu_type=v100, num_gpus=1, throughput=20.0, source="reference",
                               observed_at=timezone.now())
    jobs = [services.job_submit(owner=alice, workload=resnet50, min_throughput=5.0, max_gpus=1).job for _ in range(4)]
    services.scheduling_round_run(trigger="manual")
    before = {job.pk: Allocation.objects.get(job=job, end__isnull=True).gpu.gpu_type.name for job in jobs}
    assert set(before.values()) == {"v100"}
    steps = hours_of_work * 3600 * 10
    for job in jobs:
        running(job, step=steps, checkpoint=None, placed_ago_s=hours_of_work * 3600)
    Job.objects.filter(pk__in=[job.pk for job in jobs]).update(min_throughput=3.0)
    waiting = services.job_submit(owner=alice, workload=lm, min_throughput=10.0, max_gpus=1).job
    services.scheduling_round_run(trigger="submit")
    waiting.refresh_from_db()
    on_k80 = Allocation.objects.filter(job__in=jobs, end__isnull=True, gpu__gpu_type__name="k80").count()
    if kept:
        assert waiting.state == "pending" and on_k80 == 0
        assert "4 running job(s) on v100 would lose over 24 GPU-hours of work each if moved" in waiting.pending_reason
    else:
        assert waiting.state == "placed" and on_k80 == 1
