"""Checkpoint intervals and restart overheads are drawn from the seed, apart from the jobs."""
import random
from dataclasses import replace

import pytest

from scheduler.simulation.checkpoints import draw_checkpoint_interval, restart_overheads, with_checkpoints
from scheduler.simulation.jobs import generate_jobs
from scheduler.simulation.measurements import load_records, without_memory
from scheduler.simulation.run import build_scenario
from scheduler.simulation.truth import Truth


@pytest.fixture(scope="module")
def reference_truth():
    return Truth(without_memory(load_records(None)), seed=0)


def test_a_fifth_of_jobs_never_checkpoint_the_others_every_5_to_30_minutes():
    rng = random.Random(3)
    intervals = [draw_checkpoint_interval(rng) for _ in range(20000)]
    never = [i for i in intervals if i is None]
    assert 0.18 < len(never) / len(intervals) < 0.22
    drawn = [i for i in intervals if i is not None]
    assert 300 <= min(drawn) < 320 and 1780 < max(drawn) <= 1800


def test_restart_overheads_are_20_to_120_s_per_workload_the_same_for_the_same_seed():
    first = restart_overheads(["B", "A", "B"], seed=0)
    assert list(first) == ["A", "B"]
    assert all(20 <= s <= 120 for s in first.values())
    assert first == restart_overheads(["A", "B"], seed=0)
    assert first != restart_overheads(["A", "B"], seed=1)


def test_the_scenario_keeps_the_jobs_of_its_seed_and_adds_their_intervals(reference_truth):
    """Same arrivals, workloads, sizes and T_min as the generator alone: runs before and after
    the contract compare the same jobs."""
    scenario = build_scenario(reference_truth, jobs=50, seed=4)
    plain = generate_jobs(reference_truth, count=50, jobs_per_hour=3.0, seed=4)
    assert [replace(j, checkpoint_interval_s=None) for j in scenario.jobs] == list(plain)
    assert scenario.jobs == with_checkpoints(plain, 4) == build_scenario(reference_truth, jobs=50, seed=4).jobs
    assert any(j.checkpoint_interval_s is None for j in scenario.jobs)
    assert sorted(scenario.restart_overhead_s) == sorted(reference_truth.workloads())
    assert scenario.restart_overhead("no such workload") == 30.0  # the catalog's default
