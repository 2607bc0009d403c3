"""The timing rule on a fake clock: stops when the interval is tight, runs to its cap when not."""
import itertools

import pytest

from catalog.profiling.measure import Timing, interval, measure, t95

TIMING = Timing(warmup_steps=3, warmup_cap_s=100, batch_s=1.0, min_batches=5, max_batches=50, timed_cap_s=30)


class FakeClock:
    """Each step advances time by the next of `durations` (cycled)."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = itertools.cycle(durations)
        self.steps = 0

    def step(self):
        self.now += next(self.durations)
        self.steps += 1

    def __call__(self):
        return self.now


def test_a_steady_rate_stops_after_the_minimum_batches():
    clock = FakeClock([0.1])
    windows = []
    rate = measure(clock.step, lambda: None, TIMING, clock=clock, on_timed=windows.append)
    assert rate.stable and rate.throughput == pytest.approx(10)
    assert rate.steps == 5 * 10  # 5 batches of 1 s / 0.1 s
    assert clock.steps == 3 + 1 + 50  # warm-up, the calibration step, the timed steps
    assert windows == [True, False]


def test_a_noisy_rate_runs_to_the_cap_and_says_it_was_not_stable():
    clock = FakeClock([0.1] * 10 + [0.3] * 10)  # batches alternate between 10 and 3.3 steps/s
    rate = measure(clock.step, lambda: None, TIMING, clock=clock)
    assert not rate.stable
    assert rate.ci_low < rate.throughput < rate.ci_high
    assert 30 <= clock.now <= 36  # the timed cap, plus the batch that crossed it


def test_ranks_act_on_rank_zeros_decisions():
    clock = FakeClock([0.1])
    said = []

    def agree(value):
        said.append(value)
        return 7 if isinstance(value, int) and not isinstance(value, bool) else False if len(said) < 12 else True

    rate = measure(clock.step, lambda: None, TIMING, clock=clock, agree=agree)
    assert rate.steps == 7 * (len(said) - 3 - 1)  # batches of 7 steps until rank 0 said stop


def test_interval_and_quantiles():
    assert interval([5.0]) == (5.0, float("inf"))
    mean, half = interval([9.0, 11.0])
    assert mean == 10 and half == pytest.approx(12.706)  # t(1) x stdev sqrt(2) / sqrt(2)
    assert t95(4) == 2.776 and t95(11) == 2.228 and t95(500) == 1.96
