"""Power limits in the round's shell (docs/optimization.md, "Power limits"): the levels the
problem offers per GPU type from what the boards reported, the current placement's limit, the
setting and its audit trail, and the apply step writing Allocation.power_limit_w, a change of
the limit alone in place (the job keeps running, no new row, no interruption)."""
from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler import services
from scheduler.models import Allocation, Job, JobInterruption, SolveRun, SolverConfig, SolverConfigChange
from scheduler.optimizer import problem as opt
from scheduler.problem_source import problem_from_database
from telemetry.models import Gpu


def running_job(owner, workload, gpu, limit=None):
    job = services.job_submit(owner=owner, workload=workload, min_throughput=5.0, max_gpus=1).job
    for step in ("placed", "running"):
        job = services.job_transition(job=job, to=step, reason="test")
    Allocation.objects.create(job=job, gpu=gpu, start=timezone.now(), power_limit_w=limit,
                              predicted_throughput=10.0, predicted_power_w=300.0)
    return job


def placement(job, gpu, limit, tau=9.0, power=210.0):
    return opt.Placement(job_id=str(job.pk), gpu_type=gpu.gpu_type.name, gpu_ids=(str(gpu.pk),), consolidated=True,
                         partners=(), predicted_throughput=tau, predicted_power_w=power, power_limit_w=limit)


def decision(*placements):
    return opt.Plan(solver="ilp", placements={p.job_id: p for p in placements}, reasons={}, power_w=210.0,
                    objective=210.0, status="optimal", energy_weight=1.0, load=0.0)


def test_levels_are_fractions_of_the_datasheet_tdp_where_no_board_reported_a_range(measured):
    problem = problem_from_database(SolverConfig.load())
    assert problem.settings.power_limits is True
    assert problem.gpu_types["v100"].power_limits_w == (180.0, 210.0, 240.0, 270.0)
    assert problem.gpu_types["k80"].power_limits_w == (90.0, 105.0, 120.0, 135.0)


def test_levels_stay_within_every_healthy_boards_reported_range(measured):
    Gpu.objects.filter(gpu_type__name="v100").update(power_limit_min_w=150.0, power_limit_max_w=300.0,
                                                     power_limit_default_w=300.0)
    Gpu.objects.filter(uuid="GPU-v0").update(power_limit_min_w=200.0, power_limit_max_w=250.0)
    problem = problem_from_database(SolverConfig.load())
    assert problem.gpu_types["v100"].power_limits_w == (210.0, 240.0)


def test_a_board_that_refused_a_limit_leaves_its_type_at_the_default(measured):
    Gpu.objects.filter(uuid="GPU-v2").update(power_limit_error="Insufficient permissions")
    problem = problem_from_database(SolverConfig.load())
    assert problem.gpu_types["v100"].power_limits_w == ()
    assert problem.gpu_types["k80"].power_limits_w == (90.0, 105.0, 120.0, 135.0)


def test_the_setting_off_offers_no_levels(measured):
    config = SolverConfig.load()
    config.power_limits = False
    config.save()
    problem = problem_from_database(SolverConfig.load())
    assert problem.settings.power_limits is False
    assert all(t.power_limits_w == () for t in problem.gpu_types.values())


def test_the_current_placement_carries_the_limit_its_gpus_run_at(measured, alice, resnet50):
    job = running_job(alice, resnet50, measured[0], limit=210.0)
    other = running_job(alice, resnet50, measured[1])
    current = {j.id: j.current for j in problem_from_database(SolverConfig.load()).jobs}
    assert current[str(job.pk)].power_limit_w == 210.0
    assert current[str(other.pk)].power_limit_w is None


def test_the_setting_is_on_by_default_and_changing_it_is_audited(measured, root):
    assert SolverConfig().power_limits is True and SolverConfig.load().power_limits is True
    services.solver_config_update(by=root, values={"power_limits": False})
    change = SolverConfigChange.objects.get(field="power_limits")
    assert (change.old_value, change.new_value, change.changed_by) == ("True", "False", root)
    assert SolverConfig.load().power_limits is False


def test_a_new_allocation_carries_its_limit(measured, alice, resnet50):
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5.0, max_gpus=1).job
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services._apply(decision(placement(job, measured[0], 210.0)), run, timezone.now(), speeds={str(job.pk): 0.91})
    row = Allocation.objects.get(job=job)
    assert (row.power_limit_w, row.power_limit_speed, row.end) == (210.0, 0.91, None)
    assert Job.objects.get(pk=job.pk).state == "placed"


def test_a_round_keeps_the_speed_its_predictions_planned_under_the_limit(measured, alice, resnet50):
    """The fraction on the row is the predictions' own answer at the chosen limit (what a
    simulated node then runs at), and none is kept for a job at the default."""
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5.0, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    row = Allocation.objects.get(job=job)
    problem = problem_from_database(SolverConfig.load())
    assert row.power_limit_w is not None and row.power_limit_w < row.gpu.gpu_type.tdp_w
    speed, _ = problem.predictions.at_power_limit(resnet50.name, "v100", row.power_limit_w)
    assert row.power_limit_speed == pytest.approx(speed) and 0 < speed <= 1
    services.solver_config_update(by=None, values={"power_limits": False})
    services.job_transition(job=job, to="cancelled", reason="test")
    other = services.job_submit(owner=alice, workload=resnet50, min_throughput=5.0, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    assert Allocation.objects.filter(job=other).values_list("power_limit_w", "power_limit_speed").get() == (None, None)


def test_a_change_of_the_limit_alone_updates_the_running_allocation_in_place(measured, alice, resnet50):
    job = running_job(alice, resnet50, measured[0])
    before = Allocation.objects.get(job=job)
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services._apply(decision(placement(job, measured[0], 210.0)), run, timezone.now(), speeds={str(job.pk): 0.9})
    after = Allocation.objects.get(job=job)  # still one row: the same one, open
    assert (after.pk, after.start, after.end) == (before.pk, before.start, None)
    assert (after.power_limit_w, after.power_limit_speed, after.predicted_throughput, after.predicted_power_w) == (
        210.0, 0.9, 9.0, 210.0)
    assert Job.objects.get(pk=job.pk).state == "running"
    assert not JobInterruption.objects.filter(job=job).exists()

    services._apply(decision(replace(placement(job, measured[0], None), predicted_power_w=300.0)), run,
                    timezone.now())
    back = Allocation.objects.get(job=job)
    assert (back.pk, back.power_limit_w, back.predicted_power_w) == (before.pk, None, 300.0)


def test_a_job_whose_limit_is_unchanged_is_left_alone(measured, alice, resnet50):
    job = running_job(alice, resnet50, measured[0], limit=210.0)
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services._apply(decision(placement(job, measured[0], 210.0, tau=10.0, power=300.0)), run, timezone.now())
    row = Allocation.objects.get(job=job)
    assert (row.power_limit_w, row.predicted_throughput, row.predicted_power_w) == (210.0, 10.0, 300.0)


def test_jobs_given_the_same_new_limit_are_updated_in_one_statement(measured, alice, resnet50):
    jobs = [running_job(alice, resnet50, gpu) for gpu in measured[:3]]
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    with CaptureQueriesContext(connection) as queries:
        services._apply(decision(*(placement(job, gpu, 210.0) for job, gpu in zip(jobs, measured))), run,
                        timezone.now())
    updates = [q["sql"] for q in queries.captured_queries
               if q["sql"].startswith("UPDATE") and "power_limit_w" in q["sql"]]
    assert len(updates) == 1
    assert set(Allocation.objects.values_list("power_limit_w", "end")) == {(210.0, None)}
    assert Allocation.objects.count() == 3


class WithLimits:
    """The round's predictions with a stand-in at_power_limit on V100s: at a fraction f of the
    300 W default, speed f ** 0.3 and power f (unknown on K80s: no limit offered there)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def at_power_limit(self, workload, gpu_type, limit_w):
        return ((limit_w / 300.0) ** 0.3, limit_w / 300.0) if gpu_type == "v100" else None


def test_a_round_sets_a_limit_and_a_later_round_lifts_it_without_moving_the_job(measured, alice, resnet50,
                                                                               monkeypatch):
    """ResNet-50 does 10/s on a V100 (4/s on a K80, below its T_min of 5). At 180 W (0.6 x 300 W)
    it keeps 0.6 ** 0.3 = 86 % of its speed, 8.6/s: the round sets 180 W. With the setting off
    the next round plans the default limit on the same GPU: the same allocation row, updated."""
    from scheduler import problem_source

    learned = problem_source.planning_predictions
    monkeypatch.setattr(problem_source, "planning_predictions", lambda *a, **k: WithLimits(learned(*a, **k)))
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5.0, max_gpus=1).job
    first = services.scheduling_round_run(trigger="manual").solve_run
    row = Allocation.objects.get(job=job)
    assert row.gpu.gpu_type.name == "v100" and row.power_limit_w == 180.0
    assert row.predicted_power_w == 180.0 and first.power_w == 180.0

    services.solver_config_update(by=None, values={"power_limits": False})
    services.scheduling_round_run(trigger="manual")
    after = Allocation.objects.get(job=job)
    assert (after.pk, after.gpu_id, after.end, after.power_limit_w) == (row.pk, row.gpu_id, None, None)
    assert after.predicted_power_w == 300.0
    assert Job.objects.get(pk=job.pk).state == "placed"
    assert not JobInterruption.objects.filter(job=job).exists()
