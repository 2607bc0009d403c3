"""Gavel's policies (scheduler.optimizer.gavel*) on instances checked by hand."""
import math

import pytest

from scheduler.optimizer.gavel import GavelJob, RoundMechanism, effective_throughput, equal_share_throughput
from scheduler.optimizer.gavel_ftf import ftf_allocation
from scheduler.optimizer.gavel_max_min import max_min_allocation

TWO_TYPES = {"a": 1, "b": 1}


def one_gpu(job_id, **throughput):
    return GavelJob(job_id, dict.fromkeys(throughput, 1), throughput)


def test_equal_share_is_a_third_of_every_type_for_three_jobs():
    job = one_gpu("j3", a=1.0, b=1.0)
    assert equal_share_throughput(job, TWO_TYPES, 3) == pytest.approx(2 / 3)


def test_equal_share_is_capped_at_the_whole_time():
    """Alone on a cluster of 2 + 2 GPUs, a 1-GPU job can use only one GPU at a time."""
    job = one_gpu("j", a=4.0, b=2.0)
    assert equal_share_throughput(job, {"a": 2, "b": 2}, 1) == pytest.approx(0.5 * 4 + 0.5 * 2)


def test_max_min_on_two_types_and_three_jobs():
    """j1, j2: 2 steps/s on a, 1 on b; j3: 1 on both. X_equal gives each 1/3 of each type:
    j1, j2 1 step/s, j3 2/3. j3 is relatively best on b, so it gets b alone (beta) and j1, j2
    share a (1/2 each) and the rest of b: 1 + (1 - beta)/2 = 1.5 beta, beta = 3/4, and every
    normalised throughput is 9/8."""
    jobs = [one_gpu("j1", a=2.0, b=1.0), one_gpu("j2", a=2.0, b=1.0), one_gpu("j3", a=1.0, b=1.0)]
    x, value = max_min_allocation(jobs, TWO_TYPES)
    assert value == pytest.approx(9 / 8, rel=1e-5)
    assert x["j3"].get("a", 0.0) == pytest.approx(0.0, abs=1e-5) and x["j3"]["b"] == pytest.approx(0.75, rel=1e-5)
    for job in jobs[:2]:
        assert effective_throughput(job, x[job.id]) == pytest.approx(9 / 8, rel=1e-5)
    for gpu_type in TWO_TYPES:
        assert sum(row.get(gpu_type, 0.0) for row in x.values()) == pytest.approx(1.0, rel=1e-5)


def test_max_min_weights_divide_the_normalised_throughput():
    """Two identical jobs on one GPU, one of weight 3: it gets three times the time."""
    jobs = [GavelJob("heavy", {"a": 1}, {"a": 1.0}, weight=3.0), GavelJob("light", {"a": 1}, {"a": 1.0})]
    x, _ = max_min_allocation(jobs, {"a": 1})
    assert x["heavy"]["a"] == pytest.approx(0.75, rel=1e-5) and x["light"]["a"] == pytest.approx(0.25, rel=1e-5)


def test_a_job_that_runs_nowhere_gets_nothing_and_the_others_still_do():
    jobs = [one_gpu("j1", a=1.0), one_gpu("stuck", a=0.0)]
    x, value = max_min_allocation(jobs, {"a": 1})
    assert "stuck" not in x and x["j1"]["a"] == pytest.approx(1.0) and value == pytest.approx(1.0)


def test_finish_time_fairness_on_one_gpu_with_a_job_half_done():
    """One GPU, 1 step/s each. j1: 20 steps, 10 done in its 10 s so far; j2: 20 steps, new.
    With 1/2 of the GPU each needs 40 s in isolation. rho1 = (10 + 10/x)/40, rho2 = 20/((1-x) 40);
    equal at x^2 + 2x - 1 = 0: x = sqrt(2) - 1, rho = 1 / (2 (2 - sqrt(2)))."""
    jobs = [GavelJob("j1", {"a": 1}, {"a": 1.0}, remaining_steps=10, total_steps=20, elapsed_s=10),
            GavelJob("j2", {"a": 1}, {"a": 1.0}, remaining_steps=20, total_steps=20)]
    x, rho = ftf_allocation(jobs, {"a": 1})
    assert rho == pytest.approx(1 / (2 * (2 - math.sqrt(2))), rel=0.01)
    assert x["j1"]["a"] == pytest.approx(math.sqrt(2) - 1, rel=0.01)
    assert x["j2"]["a"] == pytest.approx(2 - math.sqrt(2), rel=0.01)


def test_finish_time_fairness_puts_the_job_that_gains_most_on_the_fast_type():
    """j1 runs 4x faster on a than on b, j2 alike on both. X_equal: j1 2.5 steps/s (40 s for its
    100 steps), j2 1 (100 s). j1 on a: rho 25/40; j2 on b: rho 1, and no allocation does better
    for j2 (one GPU at 1 step/s at most)."""
    jobs = [GavelJob("j1", {"a": 1, "b": 1}, {"a": 4.0, "b": 1.0}, remaining_steps=100, total_steps=100),
            GavelJob("j2", {"a": 1, "b": 1}, {"a": 1.0, "b": 1.0}, remaining_steps=100, total_steps=100)]
    x, rho = ftf_allocation(jobs, TWO_TYPES)
    assert x["j1"]["a"] == pytest.approx(1.0, abs=0.02) and x["j2"]["b"] == pytest.approx(1.0, abs=0.02)
    assert rho == pytest.approx(1.0, rel=0.01)


def test_the_round_mechanism_converges_to_the_allocation():
    """Three 1-GPU jobs, one GPU of a and one of b: each job's share of rounds on each type
    tends to X."""
    x = {"j1": {"a": 2 / 3}, "j2": {"a": 1 / 3, "b": 1 / 3}, "j3": {"b": 2 / 3}}
    gpus = {j: {"a": 1, "b": 1} for j in x}
    mechanism, got = RoundMechanism(), {j: {"a": 0, "b": 0} for j in x}
    rounds = 300
    for _ in range(rounds):
        chosen = mechanism.assign(x, gpus, TWO_TYPES)
        assert sorted(chosen.values()) == ["a", "b"]  # no GPU idles while a job wants it
        for j, g in chosen.items():
            got[j][g] += 1
    for j, row in x.items():
        for g in TWO_TYPES:
            assert got[j][g] / rounds == pytest.approx(row.get(g, 0.0), abs=0.02)


def test_the_round_mechanism_never_gives_a_type_more_gpus_than_it_has():
    x = {"big": {"a": 1.0}, "small": {"a": 1.0}}
    chosen = RoundMechanism().assign(x, {"big": {"a": 4}, "small": {"a": 1}}, {"a": 4})
    assert list(chosen) == ["big"] or list(chosen) == ["small"]
