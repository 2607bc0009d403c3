"""Fair share orders admission within a priority level (admission.py): where a level cannot
admit all of its jobs, those of tenants with the higher factor go first, a job worth up to 1.5
jobs of the level's lowest factor; levels stay lexicographic, and equal factors change nothing."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.admission import (
    FAIRNESS_SHARE,
    FAIR_SHARE_WEIGHT,
    RISK_SHARE,
    admission_values,
    has_tie_breaks,
)

from .factory import TablePredictions, gpu_type, job, node, problem

# docs/accounting.md's worked example: a (2 shares, half the usage) 0.5, b (1 share, 40 %)
# 0.330, c (1 share, 10 %) 0.758.
FACTORS = {"a": 0.5, "b": 2 ** -1.6, "c": 2 ** -0.4}


def contended(gpus=1, priorities=None, factors=FACTORS):
    """`gpus` GPUs of one type; one job per tenant, each able to run on any of them."""
    preds = TablePredictions(taus={("w", "x", 1, True): 10})
    jobs = [
        replace(job(n, "w", tenant=t, tmin=5, priority=(priorities or {}).get(t, 0)), fair_share=factors[t])
        for n, t in enumerate(sorted(factors), start=1)
    ]
    return problem(jobs, node("x", "n", gpus), [gpu_type("x", tdp=300)], preds, theta=1, gap=0.0)


def admitted_tenants(p, solver):
    result = get_solver(solver).solve(p)
    return sorted(j.tenant for j in p.jobs if j.id in result.placements)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy", "greedy_efficient", "greedy_fastest"])
def test_the_highest_factor_is_admitted_first_within_a_level(solver):
    assert admitted_tenants(contended(1), solver) == ["c"]
    assert admitted_tenants(contended(2), solver) == ["a", "c"]


def test_a_higher_priority_wins_whatever_its_factor():
    assert admitted_tenants(contended(1, priorities={"b": 1}), "ilp") == ["b"]


def test_equal_factors_leave_the_values_as_they_were():
    p = contended(1, factors={"a": 0.3, "b": 0.3, "c": 0.3})
    plain = tuple(replace(j, fair_share=1.0) for j in p.jobs)
    assert admission_values(p.jobs, True, [True] * 3) == admission_values(plain, True, [True] * 3)
    assert admission_values(p.jobs, False, [True] * 3) == [1.0, 1.0, 1.0]
    assert not has_tie_breaks(p.jobs) and has_tie_breaks(contended(1).jobs)


def test_each_job_gains_half_a_job_per_unit_of_factor_above_the_lowest():
    a, b, c = admission_values(contended(1).jobs, False, [True] * 3)
    # by hand: b (0.330) is the lowest; a 0.5 x (0.5 - 0.330) = 0.085; c 0.5 x (0.758 - 0.330) = 0.214
    assert b == 1.0
    assert a == pytest.approx(1.0 + FAIR_SHARE_WEIGHT * (0.5 - 2 ** -1.6)) == pytest.approx(1.0851, abs=1e-4)
    assert c == pytest.approx(1.2140, abs=1e-4)


def test_three_jobs_of_an_unused_share_outweigh_four_of_a_tenant_that_used_it_all_but_not_five():
    fresh, spent = admission_values(contended(1, factors={"a": 1.0, "b": 0.0, "c": 0.0}).jobs, False, [True] * 3)[:2]
    assert (fresh, spent) == (1.5, 1.0)
    assert 3 * fresh > 4 * spent and 3 * fresh < 5 * spent


def test_a_higher_level_outweighs_every_lower_job_with_every_bonus():
    p = contended(1, priorities={"c": 1}, factors={"a": 1.0, "b": 0.0, "c": 0.0})
    jobs = tuple(replace(j, work_at_risk=100.0) if j.tenant == "a" else j for j in p.jobs)
    a, b, c = admission_values(jobs, True, [True] * 3)
    # level 0: a 1 + 0.5 / 2 (fairness) + 0.2 (all the risk) + 0.5 (fair share) = 1.95, b 1.25
    assert (a, b) == pytest.approx((1.95, 1.25))
    assert c == pytest.approx((1 + 2 * (a + b)) * 1.5) and c > a + b
    assert FAIRNESS_SHARE + RISK_SHARE < 1.0


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_a_job_left_out_by_fair_share_says_so_in_its_pending_reason(solver):
    p = contended(1)
    reasons = get_solver(solver).solve(p).reasons
    by_tenant = {j.tenant: reasons[j.id] for j in p.jobs if j.id in reasons}
    assert sorted(by_tenant) == ["a", "b"]
    assert by_tenant["a"].endswith("Its tenant's fair-share factor is 0.50: within its priority level, jobs of "
                                   "tenants that used less of their share went first (c).")
    assert "fair-share factor is 0.33" in by_tenant["b"] and by_tenant["b"].endswith("went first (c).")


def test_no_fair_share_sentence_where_a_higher_priority_took_the_gpu_or_factors_are_equal():
    p = contended(1, priorities={"b": 1})
    assert not any("fair-share" in r for r in get_solver("ilp").solve(p).reasons.values())
    p = contended(1, factors={"a": 0.3, "b": 0.3, "c": 0.3})
    assert not any("fair-share" in r for r in get_solver("ilp").solve(p).reasons.values())
