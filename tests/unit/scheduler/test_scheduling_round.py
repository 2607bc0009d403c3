"""A scheduling round against the database: problem built from jobs, GPUs and catalog rows,
decision applied in one transaction, SolveRun recorded; dry runs change nothing."""
import time

import pytest
from django.utils import timezone

from catalog.models import Measurement
from gogh_web.outbox.models import OutboxMessage
from scheduler import services
from scheduler.models import Allocation, Job, SolveRun, SolverConfig, SolverConfigChange
from telemetry.models import Gpu, GpuState, Node
from tests.unit.gogh_web.broker import broker as broker  # a fixture, `as` marks it re-exported


@pytest.fixture
def measured(cluster, resnet50, lm, v100, k80):
    """ResNet-50: 10/s on V100, 4/s on K80, 18/s on 2 V100; LM: 30/s on V100, 20/s on K80."""
    now = timezone.now()
    rows = [
        (resnet50, v100, 1, 10.0), (resnet50, k80, 1, 4.0), (resnet50, v100, 2, 18.0),
        (lm, v100, 1, 30.0), (lm, k80, 1, 20.0),
    ]
    for workload, gpu_type, k, tau in rows:
        Measurement.objects.create(workload=workload, gpu_type=gpu_type, num_gpus=k, throughput=tau, source="reference",
                                   observed_at=now)
    return cluster


def submit(owner, workload, tmin, dj=1, priority=0):
    return services.job_submit(owner=owner, workload=workload, min_throughput=tmin, max_gpus=dj, priority=priority).job


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_round_places_jobs_on_the_cheapest_gpus_meeting_t_min(measured, alice, resnet50, lm):
    fast_needed = submit(alice, resnet50, tmin=8)  # only V100 reaches 8/s
    k80_will_do = submit(alice, lm, tmin=15)  # K80 (150 W) beats V100 (300 W)
    started = time.perf_counter()
    result = services.scheduling_round_run(trigger="manual")
    round_s = time.perf_counter() - started

    run = result.solve_run
    assert run.solver == "ilp" and run.status == "optimal" and not run.dry_run
    assert run.num_jobs == 2 and run.num_gpus == 6 and run.num_placed == 2
    assert run.num_variables > 0 and run.power_w == pytest.approx(450)
    assert 0 < run.duration_s < round_s  # the solve's own seconds, a part of the round's
    fast_needed.refresh_from_db(), k80_will_do.refresh_from_db()
    assert fast_needed.state == "placed" and fast_needed.placed_at is not None and fast_needed.pending_reason == ""
    [on_v100] = fast_needed.allocations.filter(end__isnull=True)
    assert on_v100.gpu.gpu_type.name == "v100" and on_v100.solve_run == run
    assert on_v100.predicted_throughput == 10.0 and on_v100.predicted_power_w == 300
    assert k80_will_do.allocations.get(end__isnull=True).gpu.gpu_type.name == "k80"


def test_second_round_keeps_placed_jobs_where_they_are(measured, alice, resnet50):
    job = submit(alice, resnet50, tmin=8)
    services.scheduling_round_run(trigger="manual")
    first = Allocation.objects.get(job=job)
    services.scheduling_round_run(trigger="periodic")
    assert list(Allocation.objects.filter(job=job)) == [first] and first.end is None
    job.refresh_from_db()
    assert job.state == "placed"


def test_demand_over_capacity_leaves_jobs_pending_with_reasons(measured, alice, bob, resnet50):
    jobs = [submit(alice, resnet50, tmin=8) for _ in range(5)]  # 4 V100s: one job must wait
    hopeless = submit(bob, resnet50, tmin=50, dj=2)
    services.scheduling_round_run(trigger="manual")
    states = sorted(Job.objects.get(pk=j.pk).state for j in jobs)
    assert states == ["pending", "placed", "placed", "placed", "placed"]
    waiting = Job.objects.get(pk__in=[j.pk for j in jobs], state="pending")
    assert "Not admitted" in waiting.pending_reason
    hopeless.refresh_from_db()
    assert hopeless.state == "pending" and "No GPU type reaches T_min" in hopeless.pending_reason


def test_higher_priority_job_preempts_a_placed_one(measured, alice, resnet50):
    low = [submit(alice, resnet50, tmin=8) for _ in range(4)]
    services.scheduling_round_run(trigger="manual")
    urgent = submit(alice, resnet50, tmin=8, priority=10)
    services.scheduling_round_run(trigger="submit")
    urgent.refresh_from_db()
    assert urgent.state == "placed"
    preempted = [j for j in Job.objects.filter(pk__in=[j.pk for j in low]) if j.state == "pending"]
    assert len(preempted) == 1 and "Preempted by solve" in preempted[0].pending_reason
    assert not preempted[0].allocations.filter(end__isnull=True).exists()


def test_dry_run_changes_nothing_but_records_the_run(measured, alice, resnet50):
    job = submit(alice, resnet50, tmin=8)
    result = services.scheduling_round_run(trigger="manual", dry_run=True)
    assert result.solve_run.dry_run and str(job.pk) in result.allocation.placements
    job.refresh_from_db()
    assert job.state == "pending" and not Allocation.objects.exists()


def test_failed_gpus_and_down_nodes_are_not_used(measured, alice, resnet50):
    Gpu.objects.filter(gpu_type__name="v100").update(state=GpuState.FAILED)
    job = submit(alice, resnet50, tmin=8)
    result = services.scheduling_round_run(trigger="manual")
    assert result.solve_run.num_gpus == 2
    job.refresh_from_db()
    assert job.state == "pending" and "No GPU type reaches T_min" in job.pending_reason


def test_round_uses_the_configured_solver_and_records_fallbacks(measured, alice, staff, resnet50):
    services.solver_config_update(by=staff, values={"time_limit_s": 0.1})
    SolverConfig.objects.update(time_limit_s=0.0)  # below what the form allows: forces the time-out path
    submit(alice, resnet50, tmin=8)
    run = services.scheduling_round_run(trigger="manual").solve_run
    assert run.status == "fallback" and "greedy" in run.fallback_reason and run.num_placed == 1
    assert SolveRun.objects.count() == 1


def test_solver_settings_changes_are_audited(staff):
    config = services.solver_config_update(by=staff, values={"solver": "genetic", "gap": 0.05, "theta": 2})
    assert config.solver == "genetic" and config.gap == 0.05
    changes = {c.field: (c.old_value, c.new_value, c.changed_by) for c in SolverConfigChange.objects.all()}
    assert changes == {"solver": ("ilp", "genetic", staff), "gap": ("0.01", "0.05", staff)}  # theta unchanged


def test_invalid_solver_settings_are_refused_and_not_audited(staff):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        services.solver_config_update(by=staff, values={"solver": "quantum"})
    assert not SolverConfigChange.objects.exists() and SolverConfig.load().solver == "ilp"


def test_submit_and_cancel_ask_for_one_debounced_round_after_commit(alice, resnet50, cluster, broker,
                                                                   django_capture_on_commit_callbacks):
    round_task = "scheduler.tasks.scheduling_round"
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(alice, resnet50, tmin=8)
        submit(alice, resnet50, tmin=8)
    assert broker.of(round_task) == [([], {"trigger": "submit"}, 2.0)]  # two submissions, one round
    services.scheduling_round_started()
    with django_capture_on_commit_callbacks(execute=True):
        services.job_cancel(job=job, by=alice)
    assert broker.of(round_task)[-1] == ([], {"trigger": "cancel"}, 2.0)


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_round_with_the_cells_solver(measured, alice, resnet50, lm):
    submit(alice, resnet50, tmin=8)
    submit(alice, lm, tmin=15)
    run = services.scheduling_round_run(trigger="manual", solver="cells").solve_run
    assert run.solver == "cells" and run.num_placed == 2 and run.power_w == pytest.approx(450)


def _solving_while(monkeypatch, meanwhile):
    """Make the round's solver run `meanwhile()` after solving, as if another process acted then."""
    real = services.optimizer.get_solver

    class Racing:
        def __init__(self, name, **options):
            self.inner = real(name, **options)

        def solve(self, problem):
            allocation = self.inner.solve(problem)
            meanwhile()
            return allocation

    monkeypatch.setattr(services.optimizer, "get_solver", Racing)


def test_a_decision_overtaken_by_another_round_is_not_applied(measured, alice, bob, resnet50, monkeypatch,
                                                              django_capture_on_commit_callbacks):
    job = submit(alice, resnet50, tmin=8)
    other = submit(bob, resnet50, tmin=8)
    gpu = Gpu.objects.filter(gpu_type__name="v100").first()
    _solving_while(monkeypatch, lambda: Allocation.objects.create(job=other, gpu=gpu, start=timezone.now()))
    services.scheduling_round_started()  # the submissions' round request is this round
    run = services.scheduling_round_run(trigger="periodic").solve_run
    assert run.status == "superseded" and run.num_placed == 2
    job.refresh_from_db()
    assert job.state == "pending" and not job.allocations.exists()
    assert OutboxMessage.objects.get(key=services.ROUND_KEY).kwargs == {
        "trigger": "periodic"
    }  # a fresh round is asked for


def test_a_decision_using_a_node_gone_down_is_not_applied(measured, alice, resnet50, monkeypatch):
    job = submit(alice, resnet50, tmin=8)
    _solving_while(monkeypatch, lambda: Node.objects.filter(gpus__gpu_type__name="v100").update(state="down"))
    assert services.scheduling_round_run(trigger="periodic").solve_run.status == "superseded"
    job.refresh_from_db()
    assert job.state == "pending"


def test_a_decision_using_a_node_whose_approval_was_revoked_is_not_applied(measured, alice, resnet50, monkeypatch):
    """An operator revoked the node while the round solved: the tenant's job (its command and
    environment) must not be dispatched there."""
    job = submit(alice, resnet50, tmin=8)
    _solving_while(monkeypatch, lambda: Node.objects.filter(gpus__gpu_type__name="v100").update(approved_at=None))
    assert services.scheduling_round_run(trigger="periodic").solve_run.status == "superseded"
    job.refresh_from_db()
    assert job.state == "pending" and not job.allocations.exists()


def test_a_partner_change_on_the_same_gpus_keeps_the_job_running(measured, alice, resnet50, lm):
    """When its partner ends, the survivor stays on its GPU: new allocation rows (the history
    says when it shared), no state change, so its agent does not restart it."""
    from scheduler.optimizer import problem as opt

    job, partner = submit(alice, resnet50, tmin=1), submit(alice, lm, tmin=1)
    gpu = Gpu.objects.filter(gpu_type__name="v100").first()
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    earlier = timezone.now()
    for a, b in ((job, partner), (partner, job)):
        services.job_transition(job=a, to="placed", reason="test")
        Allocation.objects.create(job=a, gpu=gpu, start=earlier, solve_run=run).partners.set([b])
    job = services.job_transition(job=job, to="running", reason="test")
    services.job_transition(job=partner, to="running", reason="test")
    services.job_transition(job=partner, to="succeeded", reason="done")  # closes the partner's rows
    alone = opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                          partners=(), predicted_throughput=10.0, predicted_power_w=300.0)
    now = timezone.now()
    decision = opt.Plan(solver="ilp", placements={str(job.pk): alone}, reasons={}, power_w=300.0, objective=300.0,
                              status="optimal", energy_weight=1.0, load=0.0)
    services._apply(decision, run, now)
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.started_at, after.placed_at) == ("running", job.started_at, job.placed_at)
    shared, current = Allocation.objects.filter(job=job).order_by("start")
    assert (list(shared.partners.values_list("pk", flat=True)), shared.end) == ([partner.pk], now)
    assert (current.gpu_id, list(current.partners.all()), current.start, current.end) == (gpu.pk, [], now, None)
    assert current.predicted_throughput == 10.0


def test_when_its_partner_ends_a_whole_round_leaves_the_survivor_on_its_gpu(measured, alice, resnet50, lm):
    """The survivor's open rows still name the ended partner until the round writes new ones;
    the round must not count that partner as sharing (it did: every choice of the survivor was
    then a migration, so it moved to the first free V100 and its agent restarted it)."""
    job, partner = submit(alice, resnet50, tmin=8), submit(alice, lm, tmin=1)
    gpu = Gpu.objects.filter(gpu_type__name="v100").order_by("-pk").first()  # not the first free one
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    for a, b in ((job, partner), (partner, job)):
        services.job_transition(job=a, to="placed", reason="test")
        Allocation.objects.create(job=a, gpu=gpu, start=timezone.now(), solve_run=run).partners.set([b])
    job = services.job_transition(job=job, to="running", reason="test")
    services.job_transition(job=partner, to="running", reason="test")
    services.job_transition(job=partner, to="succeeded", reason="done")

    services.scheduling_round_run(trigger="periodic")
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.placed_at, after.started_at) == ("running", job.placed_at, job.started_at)
    current = Allocation.objects.get(job=job, end__isnull=True)
    assert current.gpu_id == gpu.pk and not current.partners.exists()


def test_a_partner_change_is_not_applied_to_a_job_that_ended_meanwhile(measured, alice, resnet50, lm):
    """The round read the job before its agent reported the end: no open rows for a finished job."""
    from scheduler.optimizer import problem as opt

    job = submit(alice, resnet50, tmin=1)
    gpu = Gpu.objects.filter(gpu_type__name="v100").first()
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services.job_transition(job=job, to="placed", reason="test")
    Allocation.objects.create(job=job, gpu=gpu, start=timezone.now(), solve_run=run).partners.set(
        [submit(alice, lm, tmin=1)]
    )
    stale = services.job_transition(job=job, to="running", reason="test")
    services.job_transition(job=stale, to="succeeded", reason="done")
    alone = opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                          partners=(), predicted_throughput=10.0, predicted_power_w=300.0)
    decision = opt.Plan(solver="ilp", placements={str(job.pk): alone}, reasons={}, power_w=300.0, objective=300.0,
                              status="optimal", energy_weight=1.0, load=0.0)
    services._apply(decision, run, timezone.now())
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()


def _group_decision(members: list[str], gpu: Gpu):
    """A decision putting `members` (job ids) together on one GPU, each listing the others."""
    from scheduler.optimizer import problem as opt

    placements = {
        job_id: opt.Placement(job_id=job_id, gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                              partners=tuple(p for p in members if p != job_id), predicted_throughput=5.0,
                              predicted_power_w=100.0)
        for job_id in members
    }
    return opt.Plan(solver="ilp", placements=placements, reasons={}, power_w=300.0, objective=300.0,
                          status="optimal", energy_weight=1.0, load=0.0)


def test_a_group_of_three_lists_both_partners_and_losing_one_is_not_a_migration(measured, alice, resnet50, lm):
    """theta > 2: each member's row lists both other members, and the next round reads them
    back; when one ends, the other two keep their GPU (new rows, one partner each), neither
    restarted nor counted as migrated."""
    from scheduler.optimizer.problem import CurrentPlacement
    from scheduler.problem_source import _current_placements

    jobs = [submit(alice, resnet50, tmin=1), submit(alice, lm, tmin=1), submit(alice, lm, tmin=1)]
    ids = [str(job.pk) for job in jobs]
    gpu = Gpu.objects.filter(gpu_type__name="v100").first()
    placed_at = timezone.now()
    services._apply(_group_decision(ids, gpu), SolveRun.objects.create(solver="ilp", trigger="manual"), placed_at)
    for job in jobs:
        [row] = Allocation.objects.filter(job=job, end__isnull=True)
        assert set(row.partners.values_list("pk", flat=True)) == {j.pk for j in jobs} - {job.pk}
    assert _current_placements()[jobs[0].pk] == CurrentPlacement((str(gpu.pk),), tuple(sorted(ids[1:])))
    for job in jobs:
        services.job_transition(job=Job.objects.get(pk=job.pk), to="running", reason="test")
    services.job_transition(job=Job.objects.get(pk=jobs[0].pk), to="succeeded", reason="done")
    before = {job.pk: Job.objects.get(pk=job.pk) for job in jobs[1:]}
    later = timezone.now()
    services._apply(_group_decision(ids[1:], gpu), SolveRun.objects.create(solver="ilp", trigger="manual"), later)
    for job in jobs[1:]:
        after = Job.objects.get(pk=job.pk)
        assert (after.state, after.placed_at, after.started_at) == ("running", before[job.pk].placed_at,
                                                                     before[job.pk].started_at)
        assert "Migrated" not in after.state_reason
        shared, current = Allocation.objects.filter(job=job).order_by("start")
        assert shared.end == later and shared.partners.count() == 2
        other = jobs[1] if job == jobs[2] else jobs[2]
        assert (current.end, list(current.partners.values_list("pk", flat=True))) == (None, [other.pk])


def test_opening_allocations_writes_the_partner_links_in_one_insert(measured, alice, resnet50, lm,
                                                                     django_assert_num_queries):
    """Rows, then every row's partners through the link table's bulk insert: two queries for a
    job on two GPUs with two partners, not one per row."""
    from scheduler.optimizer import problem as opt

    job, partners = submit(alice, resnet50, tmin=1), [submit(alice, lm, tmin=1), submit(alice, lm, tmin=1)]
    gpus = list(Gpu.objects.filter(gpu_type__name="v100")[:2])
    placement = opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=tuple(str(g.pk) for g in gpus),
                              consolidated=True, partners=tuple(str(p.pk) for p in partners), predicted_throughput=5.0,
                              predicted_power_w=100.0, power_limit_w=240.0)
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    with django_assert_num_queries(2):
        services._open_allocations([(job, placement, frozenset(p.pk for p in partners))], run, timezone.now(),
                                   {str(job.pk): 0.93})
    rows = Allocation.objects.filter(job=job)
    assert {(row.gpu_id, frozenset(row.partners.values_list("pk", flat=True))) for row in rows} == {
        (g.pk, frozenset(p.pk for p in partners)) for g in gpus
    }
    assert {(row.power_limit_w, row.power_limit_speed) for row in rows} == {(240.0, 0.93)}
