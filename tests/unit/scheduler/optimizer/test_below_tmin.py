"""A running job measured below its T_min where it runs moves where a configuration is predicted to
meet T_min and the move pays (keep_work.below_tmin, below_tmin.price_staying); hand-checked cases."""
from dataclasses import replace

import pytest

from scheduler.optimizer import Placement, SolverSettings, keep_work
from scheduler.optimizer.keep_work import MeasuredRate, RunningWork, below_tmin, worth_moving_below

from .factory import gpu_type, job, node, problem
from .rounds import PowerTable, solve, work_of

V100, P100 = gpu_type("v100", tdp=300), gpu_type("p100", tdp=300)
SETTINGS = SolverSettings(move_cooldown_s=600.0, max_moves_per_job=3)


def rate(mean, std=0.5, count=25):
    return MeasuredRate(mean, std, count)


def test_below_tmin_only_by_two_standard_errors_over_five_measurements():
    assert rate(9.7).surely_below(10.0)  # 9.7 + 2 x 0.5 / 5 = 9.9
    assert not rate(9.85).surely_below(10.0)  # 10.05: within the noise
    assert not rate(5.0, std=0.0, count=4).surely_below(10.0)  # too few
    assert MeasuredRate.of([9.0, 11.0]) == MeasuredRate(10.0, pytest.approx(1.4142, abs=1e-4), 2)
    assert MeasuredRate.of([]) is None


def running(measured, *, remaining=36_000.0, since=100.0, overhead=30.0, **over):
    base = {"steps_since_checkpoint": since, "remaining_steps": remaining, "steps_per_s": 9.0, "power_w": 250.0,
            "num_gpus": 1, "restart_overhead_s": overhead, "placed_s_ago": 3600.0, "preemptions_last_hour": 0,
            "running": True, "measured": measured}
    return base | over


def test_a_move_pays_above_the_rate_at_which_the_job_still_ends_sooner():
    spec = job(1, tmin=10.0, current=(["v-0"], []))
    # 36,000 steps at 9/s: 4000 s; moving redoes 100 steps and pays 30 s: 36,100 / 3970 = 9.09/s, below T_min
    assert below_tmin(spec, RunningWork(**running(rate(9.0)))) == (9.0, 10.0)
    # 900 steps left: 100 s; 1000 / 70 = 14.29/s
    assert below_tmin(spec, RunningWork(**running(rate(9.0), remaining=900.0)))[1] == pytest.approx(1000 / 70)
    assert below_tmin(spec, RunningWork(**running(rate(9.0), remaining=200.0))) is None  # 22 s: ends first
    assert below_tmin(spec, RunningWork(**running(rate(9.0), remaining=None))) == (9.0, 10.0)  # runs on
    assert below_tmin(spec, RunningWork(**running(rate(9.95)))) is None  # not surely below
    assert below_tmin(spec, RunningWork(**running(None))) is None  # not measured there
    shared = job(1, tmin=10.0, current=(["v-0"], ["2"]))
    assert below_tmin(shared, RunningWork(**running(rate(9.0)))) == (9.0, 10.0)  # measured beside its partner


def test_keep_work_marks_it_and_its_move_budget_no_longer_holds_it():
    current = (["v-0"], [])
    below, spent, cooling = keep_work([
        (job(1, tmin=10.0, current=current), RunningWork(**running(rate(9.0), moves=3))),
        (job(2, tmin=10.0, current=current), RunningWork(**running(rate(10.5), moves=3))),
        (job(3, tmin=10.0, current=current), RunningWork(**running(rate(9.0), placed_s_ago=60.0))),
    ], SETTINGS)
    assert (below.measured_throughput, below.move_pays_at, below.pinned) == (9.0, 10.0, False)
    assert (spent.measured_throughput, spent.pinned) == (None, True)  # meets it: its budget holds
    assert cooling.measured_throughput == 9.0 and cooling.pinned  # the cool-down still holds


def on_v100(measured, p100_gpus=1, remaining=36_000.0):
    """Job 1 (T_min 2.0) runs alone on v-0, predicted at 2.2 there (250 W) and at 2.5 on a p100 (280 W):
    by prediction it meets T_min where it is, and staying is the cheaper choice."""
    taus = {("a", "v100", 1, True): 2.2, ("a", "p100", 1, True): 2.5}
    p = problem([job(1, "a", tmin=2.0, current=(["v-0"], []))], node("v100", "v", 1) + node("p100", "p", p100_gpus),
                [V100, P100], PowerTable(taus, {}, powers={("a", "v100"): 250.0, ("a", "p100"): 280.0}))
    placed = Placement("1", "v100", ("v-0",), True, (), 2.2, 250.0)
    work = replace(work_of(placed, remaining=remaining), measured=measured)
    return replace(p, jobs=keep_work([(p.jobs[0], work)], p.settings))


def test_measured_below_tmin_it_moves_to_the_configuration_predicted_to_meet_it():
    plan = solve("ilp", on_v100(rate(1.8, std=0.1)))
    assert plan.placements["1"].gpu_ids == ("p-0",)


def test_measured_at_its_prediction_it_stays_where_it_is():
    assert solve("ilp", on_v100(rate(2.2, std=0.1))).placements["1"].gpu_ids == ("v-0",)
    assert solve("ilp", on_v100(None)).placements["1"].gpu_ids == ("v-0",)


def test_where_the_move_does_not_pay_it_stays():
    """40 steps left at 1.8/s: 22 s; a move redoes 100 steps and pays 30 s: no rate pays."""
    assert solve("ilp", on_v100(rate(1.8, std=0.1), remaining=40.0)).placements["1"].gpu_ids == ("v-0",)


def test_with_no_room_for_a_configuration_meeting_tmin_it_keeps_running_where_it_is():
    p = on_v100(rate(1.8, std=0.1))
    holder = replace(job(2, "a", tmin=2.0, current=(["p-0"], [])), priority=3, pinned=True)
    plan = solve("ilp", replace(p, jobs=(*p.jobs, holder)))
    assert plan.placements["1"].gpu_ids == ("v-0",) and plan.placements["2"].gpu_ids == ("p-0",)
    assert plan.placements["1"].predicted_throughput == 1.8  # planned at what it measured


def shared_on_v100(measured, *, holder=False):
    """Jobs 1 (a, T_min 2.0) and 2 (b, T_min 1.5) share v-0: predicted at 2.2 x 0.95 = 2.09 and
    2.0 x 0.95 = 1.9 there, so the pair meets both T_min and saves a GPU. Job 1 alone is predicted
    at 2.5 on p-0 (280 W); b has no prediction on a p100. With `holder`, a pinned job of a higher
    level holds p-0."""
    taus = {("a", "v100", 1, True): 2.2, ("a", "p100", 1, True): 2.5, ("b", "v100", 1, True): 2.0}
    rhos = {("a", "b", "v100"): 0.95, ("b", "a", "v100"): 0.95}
    powers = {("a", "v100"): 250.0, ("a", "p100"): 280.0, ("b", "v100"): 200.0}
    jobs = [job(1, "a", tmin=2.0, current=(["v-0"], ["2"])), job(2, "b", tmin=1.5, current=(["v-0"], ["1"]))]
    if holder:
        jobs.append(job(3, "a", tmin=2.0, current=(["p-0"], [])))
    p = problem(jobs, node("v100", "v", 1) + node("p100", "p", 1), [V100, P100],
                PowerTable(taus, rhos, powers=powers), theta=2)
    works = {
        "1": replace(work_of(Placement("1", "v100", ("v-0",), True, ("2",), 2.09, 150.0)), measured=measured),
        "2": work_of(Placement("2", "v100", ("v-0",), True, ("1",), 1.9, 150.0)),
    }
    kept = keep_work([(spec, works.get(spec.id)) for spec in p.jobs], p.settings)
    if holder:
        kept = (*kept[:2], replace(kept[2], priority=5, pinned=True))
    return replace(p, jobs=kept)


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_measured_below_tmin_beside_its_partner_it_leaves_the_shared_gpu(solver):
    """Measured at 1.8 beside job 2 (predicted 2.09): the pair is parted, job 1 goes alone to p-0
    where it is predicted to meet T_min, and job 2 keeps v-0 alone (only its partner changes)."""
    plan = solve(solver, shared_on_v100(rate(1.8, std=0.1)))
    assert (plan.placements["1"].gpu_ids, plan.placements["1"].partners) == (("p-0",), ())
    assert (plan.placements["2"].gpu_ids, plan.placements["2"].partners) == (("v-0",), ())


def test_measured_at_its_prediction_beside_its_partner_the_pair_stays():
    for measured in (rate(2.09, std=0.1), None):
        plan = solve("ilp", shared_on_v100(measured))
        assert plan.placements["1"].partners == ("2",) and plan.placements["1"].gpu_ids == ("v-0",)
        assert plan.placements["2"].partners == ("1",)


def test_with_no_room_elsewhere_the_pair_stays_planned_at_what_it_measured():
    plan = solve("ilp", shared_on_v100(rate(1.8, std=0.1), holder=True))
    assert plan.placements["1"].partners == ("2",) and plan.placements["3"].gpu_ids == ("p-0",)
    assert plan.placements["1"].predicted_throughput == pytest.approx(1.8)
    assert plan.placements["2"].predicted_throughput == pytest.approx(1.9)


def test_it_moves_at_its_checkpoint_or_where_its_shortfall_outweighs_the_work_thrown_away():
    """T_min 10, measured 9/s (and its rate 9/s), restart 30 s. Since its checkpoint 5400 steps: 600 s
    thrown away, it moves; 5409 steps, 601 s: 36,000 steps left take 4000 s at 9/s and 3600 s at
    T_min, 400 s behind, less than the 631 s a move costs: it waits for its checkpoint; a job that
    never checkpoints, has run an hour and runs on (no total) stays."""
    spec = job(1, tmin=10.0, current=(["v-0"], []))
    assert below_tmin(spec, RunningWork(**running(rate(9.0), since=5400.0, remaining=36_000.0))) is not None
    assert below_tmin(spec, RunningWork(**running(rate(9.0), since=5409.0, remaining=36_000.0))) is None
    assert below_tmin(spec, RunningWork(**running(rate(9.0), since=32_400.0, remaining=None))) is None
    (waiting,) = keep_work([(spec, RunningWork(**running(rate(9.0), since=5409.0, moves=3)))], SETTINGS)
    assert waiting.measured_throughput is None and waiting.pinned  # its move budget holds it again


# (T_min, measured = its rate, steps since its checkpoint, steps left, moves now); restart 30 s.
# Shortfall: left / measured - left / T_min; a move costs since / measured + 30 s.
WORTH_MOVING = [
    (10.0, 9.0, 5400.0, 36_000.0, True),  # 600 s since: at its checkpoint
    (10.0, 9.0, 9000.0, 36_000.0, False),  # 400 s behind < 1030 s
    (10.0, 9.0, 9000.0, 360_000.0, True),  # 4000 s behind > 1030 s
    (10.0, 9.0, 9000.0, 92_700.0, False),  # 1030 s behind = 1030 s: not more
    (10.0, 9.0, 9000.0, 92_790.0, True),  # 1031 s behind
    (10.0, 9.0, 90_000.0, 360_000.0, False),  # never saved, 10,000 s of progress > 4000 s behind
    (10.0, 5.0, 10_000.0, 36_000.0, True),  # half its T_min: 3600 s behind > 2030 s
    (10.0, 9.0, 9000.0, None, False),  # runs on: only the checkpoint bound
]


@pytest.mark.parametrize(("t_min", "measured", "since", "left", "moves"), WORTH_MOVING)
def test_worth_moving_below_weighs_the_shortfall_against_the_work_a_move_throws_away(t_min, measured, since, left,
                                                                                      moves):
    work = RunningWork(**running(rate(measured), since=since, remaining=left, steps_per_s=measured))
    assert worth_moving_below(t_min, measured, work) is moves
    assert (below_tmin(job(1, tmin=t_min, current=(["v-0"], [])), work) is not None) is moves
