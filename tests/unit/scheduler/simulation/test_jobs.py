"""Generated jobs follow Gavel's generator: durations, GPU counts, Poisson arrivals, T_min."""
import math
import random
import statistics

import pytest

from scheduler.simulation.jobs import best_measured, draw_gpu_count, gavel_duration_s, generate_jobs
from scheduler.simulation.measurements import load_records, without_memory
from scheduler.simulation.truth import Truth


@pytest.fixture(scope="module")
def reference_truth():
    return Truth(without_memory(load_records(None)), seed=0)


def test_durations_are_80_percent_short_and_log_uniform():
    rng = random.Random(1)
    durations = [gavel_duration_s(rng) for _ in range(20000)]
    short = [d for d in durations if d < 60 * 10**3]
    assert 0.78 < len(short) / len(durations) < 0.82
    assert min(durations) >= 60 * 10**1.5 and max(durations) <= 60 * 10**4
    # log10(d / 60) of the short ones is uniform on [1.5, 3]: mean 2.25, variance 1.5^2 / 12
    logs = [math.log10(d / 60) for d in short]
    assert statistics.fmean(logs) == pytest.approx(2.25, abs=0.02)
    assert statistics.pvariance(logs) == pytest.approx(1.5**2 / 12, rel=0.05)


def test_gpu_counts_follow_70_10_15_5():
    rng = random.Random(2)
    counts = [draw_gpu_count(rng) for _ in range(20000)]
    shares = {k: counts.count(k) / len(counts) for k in (1, 2, 4, 8)}
    assert shares == {1: pytest.approx(0.70, abs=0.015), 2: pytest.approx(0.10, abs=0.01),
                      4: pytest.approx(0.15, abs=0.01), 8: pytest.approx(0.05, abs=0.01)}


def test_arrivals_are_poisson_at_the_rate(reference_truth):
    jobs = generate_jobs(reference_truth, count=3000, jobs_per_hour=4.0, seed=3)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(jobs, jobs[1:])]
    assert statistics.fmean(gaps) == pytest.approx(900.0, rel=0.06)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(1.0, abs=0.08)  # exponential: CV 1


def test_t_min_is_a_feasible_fraction_of_the_best_measured_throughput(reference_truth):
    for job in generate_jobs(reference_truth, count=300, jobs_per_hour=4.0, seed=4):
        best = best_measured(reference_truth, job.workload, job.max_gpus)
        assert 0.2 * best <= job.min_throughput <= 0.6 * best
        assert job.total_steps > 0


def test_the_same_seed_gives_the_same_jobs_and_another_seed_others(reference_truth):
    a = generate_jobs(reference_truth, count=50, jobs_per_hour=2.0, seed=5)
    assert a == generate_jobs(reference_truth, count=50, jobs_per_hour=2.0, seed=5)
    assert a != generate_jobs(reference_truth, count=50, jobs_per_hour=2.0, seed=6)
