"""Power limit as a decision (docs/optimization.md, "Power limits"): options and groups at a
type's lower limits, worked out by hand; limits off decide exactly as before."""
from dataclasses import dataclass, replace

import pytest

from scheduler.optimizer import CurrentPlacement, get_solver
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.limit_levels import group_power_at, planned_speeds, type_levels
from scheduler.optimizer.serialization import plan_from_dict, plan_to_dict, problem_from_dict, problem_to_dict

from .factory import TablePredictions, gpu_type, job, node, problem

GPU = replace(gpu_type("g", tdp=300), power_limits_w=(210.0,))  # 0.7 x TDP


@dataclass
class LimitPredictions(TablePredictions):
    """TablePredictions with at_power_limit from a table (workload, type, limit) -> (speed, power)."""

    limits: dict = None

    def at_power_limit(self, workload, gpu_type, limit_w):
        return (self.limits or {}).get((workload, gpu_type, limit_w))


def alone(tmin: float, limits=None, **settings):
    """One job, 10 steps/s alone on one GPU at its default limit (300 W, full load). At 210 W
    (0.7 x TDP) it keeps 0.9 of its speed (9/s) and draws 0.75 of its power, 225 W, which the
    limit caps at 210 W."""
    preds = LimitPredictions(taus={("a", "g", 1, True): 10.0},
                             limits={("a", "g", 210.0): (0.9, 0.75)} if limits is None else limits)
    return problem([job(1, "a", tmin=tmin)], node("g", "n", 1), [GPU], preds, **settings)


def test_a_loose_t_min_runs_at_the_lower_limit():
    """T_min 5 (half of 10/s): at 210 W it does 9/s >= 5 and draws 210 W < 300 W."""
    plan = get_solver("ilp").solve(alone(5.0))
    placement = plan.placements["1"]
    assert placement.power_limit_w == 210.0
    assert placement.predicted_throughput == pytest.approx(9.0)
    assert placement.predicted_power_w == pytest.approx(210.0)
    assert plan.power_w == pytest.approx(210.0)


def test_a_tight_t_min_stays_at_the_default_limit():
    """T_min 9.5: 9/s at 210 W misses it, so the limit is not even offered."""
    p = alone(9.5)
    assert [o.power_limit_w for o in compile_instance(p).all_options] == [None]
    placement = get_solver("ilp").solve(p).placements["1"]
    assert placement.power_limit_w is None and placement.predicted_power_w == pytest.approx(300.0)


def test_the_setting_off_plans_at_the_default_limit():
    placement = get_solver("ilp").solve(alone(5.0, power_limits=False)).placements["1"]
    assert placement.power_limit_w is None and placement.predicted_power_w == pytest.approx(300.0)


def test_an_unknown_limit_is_not_offered():
    """at_power_limit None for the workload: only the default."""
    inst = compile_instance(alone(5.0, limits={("other", "g", 210.0): (0.9, 0.75)}))
    assert [o.power_limit_w for o in inst.all_options] == [None]


def test_predictions_without_the_method_offer_no_limit():
    p = alone(5.0)
    p = replace(p, predictions=TablePredictions(taus=p.predictions.taus))
    assert [o.power_limit_w for o in compile_instance(p).all_options] == [None]


def test_planned_speeds_keep_the_fraction_the_plan_priced_at_a_limit_only():
    """Job 1 at 210 W keeps 0.9 of its speed; job 2 (T_min 9.5) stays at the default and is absent,
    as is every job where the predictions cannot price a limit."""
    preds = LimitPredictions(taus={("a", "g", 1, True): 10.0}, limits={("a", "g", 210.0): (0.9, 0.75)})
    p = problem([job(1, "a", tmin=5.0), job(2, "a", tmin=9.5)], node("g", "n", 2), [GPU], preds)
    plan = get_solver("ilp").solve(p)
    assert {j: pl.power_limit_w for j, pl in plan.placements.items()} == {"1": 210.0, "2": None}
    assert planned_speeds(plan, p) == {"1": pytest.approx(0.9)}
    assert planned_speeds(plan, replace(p, predictions=TablePredictions(taus=preds.taus))) == {}


def test_a_lower_limit_that_costs_more_than_a_higher_one_is_left_out():
    """Two levels: 270 W keeps 0.95 of the speed at 0.8 of the power (240 W); 240 W keeps 0.9 at
    0.85 (255 W, capped at 240 W): no cheaper than 270 W's 240 W, so only 270 W is offered."""
    gpu = replace(GPU, power_limits_w=(240.0, 270.0))
    preds = LimitPredictions(taus={("a", "g", 1, True): 10.0},
                             limits={("a", "g", 270.0): (0.95, 0.8), ("a", "g", 240.0): (0.9, 0.85)})
    p = problem([job(1, "a", tmin=5.0)], node("g", "n", 1), [gpu], preds)
    assert [o.power_limit_w for o in compile_instance(p).all_options] == [None, 270.0]


def shared_pair(tmin: float, **settings):
    """Two jobs (a, b) on one GPU of the type (the cluster has one): sharing, each keeps 0.6 of
    its 10/s = 6/s at 300 W. At 210 W a keeps 0.9 (5.4/s) and b 0.8 (4.8/s); their power
    fractions 0.75 and 0.85: the GPU draws 300 x 0.85 = 255 W, capped at the 210 W limit."""
    preds = LimitPredictions(
        taus={("a", "g", 1, True): 10.0, ("b", "g", 1, True): 10.0},
        rhos={("a", "b", "g"): 0.6, ("b", "a", "g"): 0.6},
        limits={("a", "g", 210.0): (0.9, 0.75), ("b", "g", 210.0): (0.8, 0.85)},
    )
    return problem([job(1, "a", tmin=tmin), job(2, "b", tmin=tmin)], node("g", "n", 1), [GPU], preds, **settings)


def test_a_group_shares_one_limit_and_both_members_keep_t_min():
    plan = get_solver("ilp").solve(shared_pair(4.5))
    one, two = plan.placements["1"], plan.placements["2"]
    assert one.gpu_ids == two.gpu_ids and one.partners == ("2",)
    assert one.power_limit_w == two.power_limit_w == 210.0
    assert one.predicted_throughput == pytest.approx(5.4) and two.predicted_throughput == pytest.approx(4.8)
    assert plan.power_w == pytest.approx(210.0)


def test_a_group_stays_at_the_default_when_one_member_would_miss_t_min():
    """T_min 5: a keeps 5.4/s at 210 W but b only 4.8/s, so the shared GPU stays at 300 W."""
    inst = compile_instance(shared_pair(5.0))
    assert [g.power_limit_w for g in inst.groups] == [None]
    plan = get_solver("ilp").solve(shared_pair(5.0))
    assert {p.power_limit_w for p in plan.placements.values()} == {None}


def test_group_power_at_a_limit_follows_its_busiest_member_and_never_exceeds_the_limit():
    assert group_power_at(200.0, (0.7, 0.9), 250.0) == pytest.approx(180.0)
    assert group_power_at(300.0, (0.75, 0.85), 210.0) == pytest.approx(210.0)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "cells", "greedy", "greedy_fastest", "round_robin", "random"])
def test_each_solver_sets_the_limit_it_chose_on_its_placements(solver):
    """The solvers choosing among the options that meet T_min (ilp, genetic, cells, and the
    greedy least-power fill that is also the ILP's fallback) take the cheaper limit; the
    baselines choosing among every configuration plan at the default."""
    placement = get_solver(solver).solve(alone(5.0, time_limit_s=2.0)).placements["1"]
    assert placement.power_limit_w == (210.0 if solver in ("ilp", "genetic", "cells", "greedy") else None)


def running(tmin: float, limit: float | None = None, **settings):
    """The job of alone() running on n-0 at `limit`, with a move penalty that a move would pay."""
    p = alone(tmin, migration_cost_w=500.0, **settings)
    current = CurrentPlacement(("n-0",), (), limit)
    return replace(p, jobs=(replace(p.jobs[0], current=current),))


def test_changing_only_the_limit_of_a_running_job_is_no_move():
    """Its option at 210 W keeps its GPU: current, and its cost is its power alone (no 500 W move)."""
    inst = compile_instance(running(5.0))
    at_limit = next(o for o in inst.all_options if o.power_limit_w == 210.0)
    assert at_limit.current and at_limit.cost == pytest.approx(inst.weight * 210.0)
    plan = get_solver("ilp").solve(running(5.0))
    placement = plan.placements["1"]
    assert placement.gpu_ids == ("n-0",) and placement.power_limit_w == 210.0
    assert plan.objective == pytest.approx(inst.weight * 210.0)


def test_a_running_job_keeps_the_limit_it_runs_at_where_nothing_better_is_offered():
    """Running at 210 W with the setting off: back to the default on the same GPU, no move."""
    inst = compile_instance(running(5.0, limit=210.0, power_limits=False))
    assert inst.current_choice(0) == ("o", 0) and inst.all_options[0].power_limit_w is None
    placement = get_solver("ilp").solve(running(5.0, limit=210.0, power_limits=False)).placements["1"]
    assert placement.gpu_ids == ("n-0",) and placement.power_limit_w is None


def test_the_current_choice_is_the_option_at_the_limit_the_job_runs_at():
    inst = compile_instance(running(5.0, limit=210.0))
    kind, i = inst.current_choice(0)
    assert kind == "o" and inst.all_options[i].power_limit_w == 210.0


def reference_problem(**settings):
    """Eight jobs of three workloads on two types, two of them running, some pairs measured."""
    fast, slow = replace(gpu_type("fast", tdp=300), power_limits_w=(180.0, 240.0)), gpu_type("slow", tdp=150)
    slow = replace(slow, power_limits_w=(90.0, 120.0))
    taus = {}
    for w, base in (("a", 8.0), ("b", 5.0), ("c", 12.0)):
        taus |= {(w, "fast", 1, True): base, (w, "fast", 2, True): 1.8 * base, (w, "slow", 1, True): base / 2,
                 (w, "slow", 2, True): 0.9 * base}
    rhos = {(w, v, "fast"): 0.6 for w in "abc" for v in "abc"}
    # At a fraction f of the default limit: speed f ** s (s by workload), power f.
    tdp = {"fast": 300.0, "slow": 150.0}
    limits = {(w, t, lim): ((lim / tdp[t]) ** s, lim / tdp[t]) for w, s in (("a", 0.3), ("b", 0.4), ("c", 0.5))
              for t, levels in (("fast", (180.0, 240.0)), ("slow", (90.0, 120.0))) for lim in levels}
    preds = LimitPredictions(taus=taus, rhos=rhos, limits=limits)
    jobs = [job(1, "a", tmin=3.0, current=(["f-0"], [])), job(2, "b", tmin=2.0, current=(["s-0"], [])),
            job(3, "c", tmin=10.0, dj=2), job(4, "a", tmin=4.0), job(5, "b", tmin=2.5), job(6, "c", tmin=5.0),
            job(7, "a", tmin=7.0, dj=2), job(8, "b", tmin=1.0)]
    gpus = node("fast", "f", 4) + node("slow", "s", 4)
    return problem(jobs, gpus, [fast, slow], preds, **settings)


def without_limits(p):
    return replace(p, predictions=TablePredictions(taus=p.predictions.taus, rhos=p.predictions.rhos),
                   gpu_types={name: replace(t, power_limits_w=()) for name, t in p.gpu_types.items()})


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy"])
def test_limits_off_decide_exactly_as_without_limits(solver):
    off = get_solver(solver).solve(reference_problem(power_limits=False, seed=3))
    before = get_solver(solver).solve(without_limits(reference_problem(seed=3)))
    assert off.placements == before.placements and off.reasons == before.reasons
    assert off.objective == pytest.approx(before.objective) and off.variables == before.variables


def test_limits_on_save_power_on_the_reference_problem_and_keep_every_t_min():
    on = get_solver("ilp").solve(reference_problem())
    off = get_solver("ilp").solve(reference_problem(power_limits=False))
    assert on.power_w < off.power_w and set(on.placements) == set(off.placements)
    assert any(p.power_limit_w is not None for p in on.placements.values())
    tmin = {j.id: j.min_throughput for j in reference_problem().jobs}
    assert all(p.predicted_throughput >= tmin[p.job_id] for p in on.placements.values())


def test_limits_travel_through_the_serialised_problem_and_plan():
    p = running(5.0, limit=210.0)
    back = problem_from_dict(problem_to_dict(p))
    assert back.jobs[0].current.power_limit_w == 210.0
    assert back.predictions.at_power_limit("a", "g", 210.0) == (0.9, 0.75)
    assert back.gpu_types["g"].power_limits_w == (210.0,)
    plan = get_solver("ilp").solve(back)
    assert plan_from_dict(plan_to_dict(plan)).placements["1"].power_limit_w == 210.0


def test_type_levels_are_fractions_of_the_default_within_every_boards_range():
    assert type_levels(300.0, []) == (180.0, 210.0, 240.0, 270.0)  # the datasheet TDP
    boards = [(150.0, 300.0, 300.0, ""), (200.0, 280.0, 300.0, "")]  # allowed: 200..280
    assert type_levels(250.0, boards) == (210.0, 240.0, 270.0)
    assert type_levels(300.0, [(100.0, 260.0, 260.0, "")]) == (156.0, 182.0, 208.0, 234.0)
    assert type_levels(300.0, boards + [(150.0, 300.0, 300.0, "Insufficient permissions")]) == ()


def test_limits_form_the_same_pairs_as_without_them_and_offer_them_at_their_limits():
    """Pairs are matched on the jobs' default-limit costs: running alone at a lower limit, which
    is cheaper, does not cost the round a pair it would have formed."""
    on, off = compile_instance(reference_problem()), compile_instance(reference_problem(power_limits=False))
    assert {(g.members, g.gpu_type) for g in on.groups} == {(g.members, g.gpu_type) for g in off.groups}
    assert any(g.power_limit_w is not None for g in on.groups)


def test_without_surplus_value_a_group_is_offered_at_its_cheapest_limit_only():
    """Same GPU, less power: the dearer variants could never be chosen. With a value on surplus
    throughput the faster ones stay too."""
    plain = compile_instance(shared_pair(4.5))
    assert [g.power_limit_w for g in plain.groups] == [210.0]
    valued = compile_instance(shared_pair(4.5, throughput_value_w=1.0))
    assert [g.power_limit_w for g in valued.groups] == [None, 210.0]


def test_a_pinned_job_may_still_change_its_limit():
    """A job in its move cool-down keeps its configuration, at any of its limits."""
    p = running(5.0)
    p = replace(p, jobs=(replace(p.jobs[0], pinned=True),))
    placement = get_solver("ilp").solve(p).placements["1"]
    assert placement.gpu_ids == ("n-0",) and placement.power_limit_w == 210.0


def test_a_probe_is_offered_the_default_limit_only():
    """A probe measures its configuration as it runs by default."""
    p = alone(5.0)
    p = replace(p, jobs=(replace(p.jobs[0], probe=True),))
    assert [o.power_limit_w for o in compile_instance(p).all_options] == [None]
