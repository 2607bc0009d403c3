"""Finish-time fairness orders admission within a priority level (admission.py, Themis' rule):
a job whose expected rho stands above the level's lowest gains up to FTF_WEIGHT of a job's
worth; levels stay lexicographic, and equal rho change nothing."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.admission import FTF_WEIGHT, admission_values, has_tie_breaks

from .factory import TablePredictions, gpu_type, job, node, problem

RHOS = {"a": 1.0, "b": 4.0, "c": 2.0}


def contended(gpus=1, priorities=None, rhos=RHOS):
    """`gpus` GPUs of one type; one job per tenant, each able to run on any of them."""
    preds = TablePredictions(taus={("w", "x", 1, True): 10})
    jobs = [
        replace(job(n, "w", tenant=t, tmin=5, priority=(priorities or {}).get(t, 0)), finish_time_fairness=rhos[t])
        for n, t in enumerate(sorted(rhos), start=1)
    ]
    return problem(jobs, node("x", "n", gpus), [gpu_type("x", tdp=300)], preds, theta=1, gap=0.0)


def admitted_tenants(p, solver):
    result = get_solver(solver).solve(p)
    return sorted(j.tenant for j in p.jobs if j.id in result.placements)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy", "greedy_efficient", "greedy_fastest"])
def test_the_job_furthest_behind_is_admitted_first_within_a_level(solver):
    assert admitted_tenants(contended(1), solver) == ["b"]
    assert admitted_tenants(contended(2), solver) == ["b", "c"]


def test_a_higher_priority_wins_however_far_behind_the_others_are():
    assert admitted_tenants(contended(1, priorities={"a": 1}, rhos={"a": 1.0, "b": 100.0, "c": 50.0}), "ilp") == ["a"]


def test_each_job_gains_up_to_half_a_job_by_its_rho_over_the_lowest():
    a, b, c = admission_values(contended(1).jobs, False, [True] * 3)
    # by hand: a (1.0) is the lowest; b 0.5 x (1 - 1/4) = 0.375; c 0.5 x (1 - 1/2) = 0.25
    assert (a, b, c) == pytest.approx((1.0, 1.375, 1.25))
    far = admission_values(contended(1, rhos={"a": 1.0, "b": 1e9, "c": 1.0}).jobs, False, [True] * 3)[1]
    assert far < 1.0 + FTF_WEIGHT


def test_equal_rho_leave_the_values_as_they_were():
    p = contended(1, rhos={"a": 3.0, "b": 3.0, "c": 3.0})
    plain = tuple(replace(j, finish_time_fairness=1.0) for j in p.jobs)
    assert admission_values(p.jobs, True, [True] * 3) == admission_values(plain, True, [True] * 3)
    assert not has_tie_breaks(p.jobs) and has_tie_breaks(contended(1).jobs)


def test_a_higher_level_outweighs_every_lower_job_with_the_rho_bonus():
    a, b, c = admission_values(contended(1, priorities={"a": 1}, rhos={"a": 1.0, "b": 1e9, "c": 1.0}).jobs,
                               False, [True] * 3)
    assert c == 1.0 and b == pytest.approx(1.5)
    assert a > b + c
