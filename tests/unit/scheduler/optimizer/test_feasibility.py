"""Each feasibility rule alone (filters and their reasons, scores), and the solvers honouring it."""
from dataclasses import replace

import pytest

from scheduler.optimizer import feasibility as rules, get_solver
from scheduler.optimizer.aggregation import aggregate
from scheduler.optimizer.problem import SolverSettings

from .factory import TablePredictions, gpu_type, job, node, problem

SMALL, BIG = gpu_type("small", tdp=100, memory=12.0), gpu_type("big", tdp=300, memory=32.0)


def test_memory_a_job_fits_a_type_with_at_least_its_need_and_unknown_needs_fit():
    assert rules.memory_fits(12.0, SMALL) and not rules.memory_fits(12.5, SMALL) and rules.memory_fits(None, SMALL)
    assert rules.group_memory_fits([16.0, 16.0], BIG) and not rules.group_memory_fits([16.0, 16.5], BIG)
    assert rules.group_memory_fits([None, 32.0], BIG)
    assert rules.why_no_memory(40, {"big": BIG, "small": SMALL}) == (
        "Needs 40 GB of GPU memory per GPU: more than any GPU type in the cluster has (big 32 GB, small 12 GB)."
    )


def test_tmin_an_option_meets_it_at_or_above_and_never_when_unknown():
    j = job(1, tmin=5.0, dj=4)
    assert rules.meets_tmin(5.0, j) and not rules.meets_tmin(4.99, j) and not rules.meets_tmin(None, j)
    assert not rules.meets_tmin(0.0, job(2, tmin=0.0))  # 0 steps/s is no prediction
    assert rules.keeps_tmin(5.0, j) and not rules.keeps_tmin(4.99, j)
    pair = (j, job(2, tmin=7.0))
    assert rules.group_meets_tmin((5.0, 7.0), pair) and not rules.group_meets_tmin((5.0, 6.9), pair)
    assert rules.why_below_tmin(j, 1.0, 1, "fast") == (
        "No GPU type reaches T_min = 5 steps/s within D_j = 4 GPU(s): the best is 1 steps/s on 1 x fast."
    )


def test_layout_consolidated_needs_a_node_that_large_and_spread_needs_two_nodes():
    one_node = aggregate(tuple(node("big", "a", 4)))["big"]
    two_nodes = aggregate(tuple(node("big", "a", 4) + node("big", "b", 2)))["big"]
    assert rules.layout_fits(4, True, one_node) and not rules.layout_fits(8, True, one_node)
    assert not rules.layout_fits(2, False, one_node) and rules.layout_fits(2, False, two_nodes)
    assert rules.layout_fits(6, False, two_nodes)


def test_sharing_theta_caps_groups_by_the_round_and_the_type():
    assert rules.sharing_theta(SolverSettings(theta=9)) == 4 and rules.sharing_theta(SolverSettings(theta=2)) == 2
    three = replace(gpu_type("three", tdp=300), theta=3)
    assert rules.may_share(three, 2, 4) and rules.may_share(three, 3, 4) and not rules.may_share(three, 4, 4)
    assert not rules.may_share(three, 3, 2) and not rules.may_share(three, 1, 4)


def test_tenants_never_share_and_a_switch_serves_its_owner_only():
    assert rules.one_tenant([job(1, tenant="t"), job(2, tenant="t")])
    assert not rules.one_tenant([job(1, tenant="t"), job(2, tenant="u")])
    assert rules.switch_allows(None, "t") and rules.switch_allows("t", "t") and not rules.switch_allows("u", "t")


def test_scores_the_cost_of_an_option_and_of_a_group():
    settings = SolverSettings(throughput_value_w=10.0, migration_cost_w=50.0)
    j = job(1, tmin=4.0)
    assert rules.option_cost(j, BIG, settings, 2, 6.0, 600.0, 1.0, False, False) == pytest.approx(600 - 10 * 0.5)
    assert rules.option_cost(j, BIG, settings, 2, 12.0, 600.0, 2.0, True, True) == pytest.approx(
        2 * (600 - 20) - 10 + 50
    )
    both = (j, job(2, tmin=2.0))
    assert rules.group_cost(both, BIG, settings, (5.0, 2.0), 300.0, 1.0, True, (j,)) == pytest.approx(
        300 - 10 + 50 - 10 * 0.25
    )


def test_a_move_costs_its_penalty_at_the_energy_weight_where_a_job_carries_one():
    settings = SolverSettings(migration_cost_w=50.0)
    flat, dear = job(1, tmin=4.0), replace(job(2, tmin=4.0), move_penalty_w=120.0)
    assert rules.move_cost(flat, settings, 2.0) == 50.0
    assert rules.move_cost(dear, settings, 2.0) == 240.0
    assert rules.option_cost(dear, BIG, settings, 1, 4.0, 300.0, 2.0, False, True) == pytest.approx(600 + 240)
    assert rules.option_cost(dear, BIG, settings, 1, 4.0, 300.0, 2.0, False, False) == pytest.approx(600)
    assert rules.group_cost((flat, dear), BIG, settings, (4.0, 4.0), 300.0, 2.0, False, (flat, dear)) == (
        pytest.approx(600 + 50 + 240)
    )


def test_every_solver_follows_the_memory_and_tmin_filters():
    """Job 1 needs 20 GB: only the big type. Job 2 meets T_min on small only at 2 GPUs, which no
    small node has: the optimising solvers leave it out with the reason, on big it is too slow."""
    preds = TablePredictions(taus={("a", "small", 1, True): 9, ("a", "big", 1, True): 9, ("b", "small", 1, True): 3,
                                   ("b", "small", 2, True): 6, ("b", "big", 1, True): 2})
    jobs = [job(1, "a", tmin=5, memory=20), job(2, "b", tmin=5, dj=2)]
    p = problem(jobs, node("small", "s", 1) + node("big", "b", 1), [SMALL, BIG], preds)
    for name in ("ilp", "genetic", "cells", "greedy", "greedy_efficient"):
        result = get_solver(name).solve(p)
        assert result.placements["1"].gpu_type == "big" and "2" not in result.placements, name
        assert result.reasons["2"] == rules.why_below_tmin(p.jobs[1], 3, 1, "small"), name
    for name in ("greedy_fastest", "round_robin", "random"):  # baselines may run below T_min, never out of memory
        result = get_solver(name).solve(p)
        assert result.placements.get("1") is None or result.placements["1"].gpu_type == "big", name
