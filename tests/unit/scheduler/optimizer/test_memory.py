"""GPU memory: a job's need (its own, else its workload's measured peak) fits each GPU it
gets, a shared GPU holds both needs, and a job that fits no GPU type waits and says so."""
import json

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.catalog_predictions import CatalogPredictions, MeasurementRow
from scheduler.optimizer.reasons import NO_MEMORY
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict

from .factory import TablePredictions, gpu_type, job, node, problem

BIG, SMALL = gpu_type("big", tdp=300, memory=32), gpu_type("small", tdp=100, memory=12)


def sharing(memories, **job_memory):
    """Two jobs that keep T_min sharing one big GPU (300 W) rather than two (600 W)."""
    preds = TablePredictions(taus={("a", "big", 1, True): 10}, rhos={("a", "a", "big"): 0.6}, memories=memories)
    jobs = [job(1, "a", tmin=5, memory=job_memory.get("one")), job(2, "a", tmin=5, memory=job_memory.get("two"))]
    return problem(jobs, node("big", "b", 2), [BIG], preds)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy"])
def test_a_shared_gpu_holds_both_memory_needs(solver):
    assert get_solver(solver).solve(sharing({"a": 16})).power_w == pytest.approx(300)  # 16 + 16 <= 32
    apart = get_solver(solver).solve(sharing({"a": 17}))  # 17 + 17 > 32
    assert apart.power_w == pytest.approx(600)
    assert apart.placements["1"].gpu_ids != apart.placements["2"].gpu_ids


def test_the_jobs_own_need_overrides_the_workloads_measured_one():
    assert get_solver("ilp").solve(sharing({"a": 17}, one=10, two=10)).power_w == pytest.approx(300)
    assert get_solver("ilp").solve(sharing({}, one=20, two=13)).power_w == pytest.approx(600)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "cells", "greedy", "greedy_fastest", "round_robin", "random"])
def test_a_job_goes_only_where_its_memory_fits_and_waits_with_the_reason_where_none_does(solver):
    preds = TablePredictions(taus={(w, t, 1, True): 10 for w in ("mid", "huge") for t in ("big", "small")},
                             memories={"mid": 20, "huge": 40})
    jobs = [job(1, "mid", tmin=5), job(2, "huge", tmin=5)]
    result = get_solver(solver).solve(problem(jobs, node("small", "s", 2) + node("big", "b", 1), [SMALL, BIG], preds))
    assert result.placements["1"].gpu_type == "big"  # 20 GB: not on a 12 GB GPU, although cheaper
    assert result.reasons["2"] == NO_MEMORY.format(need=40, types="big 32 GB, small 12 GB")


def test_measured_peak_memory_comes_from_catalog_rows_and_travels_with_a_cell():
    rows = [
        MeasurementRow("a", "big", 1, True, None, 10.0, memory_gb=9.5),
        MeasurementRow("a", "small", 1, True, None, 4.0, memory_gb=11.0),
    ]
    predictions = CatalogPredictions(rows)
    assert predictions.memory_gb("a") == 11.0 and predictions.memory_gb("b") is None
    p = problem([job(1, "a", tmin=1)], node("small", "s", 1), [SMALL], predictions)
    back = problem_from_dict(json.loads(json.dumps(problem_to_dict(p))))
    assert back.predictions.memory_gb("a") == 11.0
