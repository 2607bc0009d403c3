"""Tenants behind their water-filled entitlement (entitlement.py): who is behind, what their
jobs are given, and the round that gives a behind tenant's job its D_j GPUs with what
admission leaves; hand-checked."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.entitlement import behind_entitlement, held_gpus, shortfalls, water_fill
from scheduler.optimizer.feasibility import pace_worth
from scheduler.optimizer.finish_time import PACE_VALUE_W

from .factory import TablePredictions, gpu_type, job, node, problem

X = gpu_type("x", tdp=300)
PREDS = TablePredictions(taus={("w", "x", 1, True): 10, ("w", "x", 2, True): 18})


def test_water_fill_splits_by_shares_and_gives_what_one_cannot_use_to_the_others():
    assert water_fill(4, {"a": 4, "b": 4}, {"a": 3, "b": 1}) == {"a": 3, "b": 1}
    # b asks 1 of its 3: a gets the other 2 on top of its 3
    assert water_fill(6, {"a": 10, "b": 1}, {"a": 2, "b": 2}) == {"a": 5, "b": 1}
    assert water_fill(6, {"a": 0, "b": 2}, {"a": 2, "b": 2}) == {"a": 0.0, "b": 2}


def test_a_shared_gpu_counts_half_and_a_waiting_job_none():
    assert held_gpus(job(1, current=(["g0", "g1"], []))) == 2
    assert held_gpus(job(1, current=(["g0"], ["2"]))) == 0.5
    assert held_gpus(job(1)) == 0


def test_a_tenant_holding_less_than_its_water_filled_entitlement_falls_short_by_the_part_it_lacks():
    """8 GPUs, shares a 1, b 1. a asks 4 (two jobs of D_j 2) and holds 2; b asks 2 and holds 2.
    Demand 6 < 8: each is entitled to its demand, a 4 (holds 2: short by half), b 2 (holds 2)."""
    jobs = (job(1, tenant="a", dj=2, current=(["g0"], [])), job(2, tenant="a", dj=2, current=(["g1"], [])),
            job(3, tenant="b", dj=2, current=(["g2", "g3"], [])))
    assert shortfalls(jobs, 8, {"a": 1, "b": 1}) == {"a": pytest.approx(0.5)}
    # 4 GPUs: entitled 2 each by shares; a holds 2, b 2: nobody short
    assert shortfalls(jobs, 4, {"a": 1, "b": 1}) == {}
    # shares 3:1 of 4 GPUs: a 3 (holds 2: short by 1/3), b 1 (holds 2)
    assert shortfalls(jobs, 4, {"a": 3, "b": 1}) == {"a": pytest.approx(1 / 3)}


def test_a_tenant_alone_with_jobs_is_short_of_no_one():
    """Two tenants in the cluster, only one with training jobs: no other tenant to be fair to, so
    its jobs are left at their T_min (the trade-off page's one-tenant preview, a real round)."""
    jobs = (job(1, tenant="a", dj=2, current=(["g0"], [])),)
    assert shortfalls(jobs, 8, {"a": 1, "b": 1}) == {}
    assert behind_entitlement(jobs, 8, {"a": 1, "b": 1}, PREDS, ["x"]) == jobs
    with_b = (*jobs, job(2, tenant="b", dj=1, current=(["g1"], [])))
    assert shortfalls(with_b, 8, {"a": 1, "b": 1}) == {"a": pytest.approx(0.5)}


def test_service_replicas_and_probes_are_not_counted_nor_marked():
    jobs = (replace(job(1, tenant="a", dj=2), service=True), replace(job(2, tenant="a", dj=2), probe=True),
            job(3, tenant="b", current=(["g0"], [])))
    assert shortfalls(jobs, 8, {"a": 1, "b": 1}) == {}
    assert behind_entitlement(jobs, 8, {"a": 1, "b": 1}, PREDS, ["x"]) == jobs


def test_a_short_tenants_jobs_get_their_best_rate_as_pace_worth_d_j_times_the_shortfall():
    # a holds 1 of the 4 its jobs ask (8 GPUs, shares 1:1, demand 5): short by 3/4
    jobs = (job(1, tenant="a", tmin=5, dj=2), job(2, tenant="a", tmin=5, dj=2, current=(["g1"], [])),
            job(3, tenant="b", tmin=5, current=(["g0"], [])))
    a1, a2, b = behind_entitlement(jobs, 8, {"a": 1, "b": 1}, PREDS, ["x"])
    assert (a1.pace, a1.pace_weight) == (18.0, pytest.approx(1.5))  # 2 x within D_j 2, 2 x 3/4
    assert (a2.pace, a2.pace_weight) == (18.0, pytest.approx(1.5))
    assert b == jobs[2]
    # a best rate no faster than T_min: nothing to gain, left as it is
    slow = (job(1, tenant="a", tmin=20, dj=2),)
    assert behind_entitlement(slow, 8, {"a": 1}, PREDS, ["x"]) == slow


def test_a_jobs_own_pace_stands_where_the_shortfall_is_worth_less():
    """D_j 2, its tenant short by 1/4 (holds 3 of the 4 asked): 2 x 1/4 = 0.5 x PACE_VALUE_W at
    its best rate would be worth less than its own pace, kept; short by all (nothing held):
    weight 2, raised."""
    own = replace(job(1, tenant="a", tmin=5, dj=2), pace=8.0)
    held = job(2, tenant="a", tmin=5, dj=2, current=(["g0", "g1", "g2"], []))
    other = job(3, tenant="b", tmin=5, current=(["g7"], []))  # b asks 1, holds it
    assert behind_entitlement((own, held, other), 8, {"a": 1}, PREDS, ["x"])[0] == own
    raised, _ = behind_entitlement((replace(own, pace=12.0), other), 8, {"a": 1}, PREDS, ["x"])
    assert (raised.pace, raised.pace_weight) == (18.0, 2.0)


def test_a_single_gpu_job_is_left_as_it_is():
    """A single-GPU job holds its D_j once admitted: a faster type adds nothing to its tenant's
    GPU time."""
    single = (job(1, tenant="a", tmin=5),)
    assert behind_entitlement(single, 8, {"a": 1}, PREDS, ["x"]) == single


def test_a_pace_is_worth_its_weight_times_the_pace_value():
    paced = replace(job(1, tmin=5, dj=2), pace=18.0)
    assert pace_worth(paced, 18.0, 1.0) == pytest.approx(PACE_VALUE_W)
    assert pace_worth(replace(paced, pace_weight=2.0), 18.0, 1.0) == pytest.approx(2 * PACE_VALUE_W)
    assert pace_worth(replace(paced, pace_weight=2.0), 11.5, 1.0) == pytest.approx(PACE_VALUE_W)  # half way


def test_a_behind_tenants_job_gets_its_d_j_gpus_while_they_are_idle():
    """4 x GPUs (300 W each). A (tenant a, D_j 2, T_min 5): 10/s on one, 18/s on two; B (tenant b,
    D_j 1, T_min 5). Unmarked, one GPU meets A's T_min for less power. a holds nothing of its
    entitlement (2 of 2 asked, demand 3 of 4 GPUs: short by all), so A's pace is 18/s worth 2 x
    400 W: two GPUs (600 W - 800) beat one (300 W - 800 x 5/13); B keeps its GPU."""
    plain = problem([job(1, tenant="a", tmin=5, dj=2), job(2, tenant="b", tmin=5)], node("x", "n", 4), [X], PREDS)
    unmarked = get_solver("ilp").solve(plain).placements
    assert len(unmarked["1"].gpu_ids) == 1 and len(unmarked["2"].gpu_ids) == 1
    marked = replace(plain, jobs=behind_entitlement(plain.jobs, 4, {"a": 1}, PREDS, ["x"]))
    placed = get_solver("ilp").solve(marked).placements
    assert len(placed["1"].gpu_ids) == 2 and len(placed["2"].gpu_ids) == 1


def test_a_behind_tenants_job_never_takes_another_jobs_place():
    """2 GPUs, A (tenant a, D_j 2) behind and B (tenant b, D_j 1, T_min 5) waiting: admission
    first, so both run, A on one GPU."""
    jobs = [job(1, tenant="a", tmin=5, dj=2), job(2, tenant="b", tmin=5)]
    plain = problem(jobs, node("x", "n", 2), [X], PREDS)
    marked = replace(plain, jobs=behind_entitlement(plain.jobs, 2, {"a": 1, "b": 1}, PREDS, ["x"]))
    assert marked.jobs[0].pace_weight == 2.0
    result = get_solver("ilp").solve(marked)
    assert len(result.placements["1"].gpu_ids) == 1 and len(result.placements["2"].gpu_ids) == 1
