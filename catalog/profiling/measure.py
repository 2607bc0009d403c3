"""The timing rule: warm up, then time batches of steps until the rate is stable.

A batch is as many steps as fit in `batch_s` (from the last warm-up step's time), timed from
one device synchronisation to the next, so queued GPU work is counted where it runs. After
`min_batches` batches, the measurement stops once the 95 % confidence interval of the mean
batch rate (Student's t) is within `rel_half_width` of the mean, or at `timed_cap_s` or
`max_batches`, whichever comes first (the result then says it was not stable).

Processes that must decide together (the ranks of a data-parallel job) pass `agree`, which
makes every rank act on rank 0's value: the batch length and the decision to stop.
"""
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Timing:
    warmup_steps: int
    warmup_cap_s: float
    batch_s: float
    min_batches: int
    max_batches: int
    timed_cap_s: float
    rel_half_width: float = 0.02


#: On a GPU: 10 warm-up steps (cuDNN autotuning, allocator growth) within 15 s, batches of
#: ~0.5 s, 5 to 60 batches, at most 25 s timed. docs/profiling.md adds these up per suite.
GPU_TIMING = Timing(warmup_steps=10, warmup_cap_s=15.0, batch_s=0.5, min_batches=5, max_batches=60,
                    timed_cap_s=25.0)
#: Tiny mode on a CPU: the rule runs, briefly (tests and dry runs, not measurements).
TINY_TIMING = Timing(warmup_steps=2, warmup_cap_s=1.0, batch_s=0.02, min_batches=3, max_batches=10,
                     timed_cap_s=0.3)

# Two-sided 95 % quantiles of Student's t by degrees of freedom; 1.96 (normal) beyond the table.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


@dataclass(frozen=True, slots=True)
class Rate:
    throughput: float  # mean of the batches' steps/s
    ci_low: float
    ci_high: float
    steps: int  # steps timed
    stable: bool  # the interval met the rule before a cap


def t95(df: int) -> float:
    """The quantile of the largest tabulated df not above `df` (conservative between rows)."""
    return _T95[max(k for k in _T95 if k <= df)] if df < 120 else 1.96


def interval(rates: list[float]) -> tuple[float, float]:
    """Mean and 95 % half-width of the mean of `rates` (half-width inf for fewer than two)."""
    mean = statistics.fmean(rates)
    if len(rates) < 2:
        return mean, math.inf
    return mean, t95(len(rates) - 1) * statistics.stdev(rates) / math.sqrt(len(rates))


def _same(value):
    return value


def measure(step: Callable[[], None], sync: Callable[[], None], timing: Timing, *,
            agree: Callable = _same, on_timed: Callable[[bool], None] | None = None,
            clock: Callable[[], float] = time.perf_counter) -> Rate:
    """Run the rule on `step`; `on_timed(True/False)` is called when timing starts and ends
    (the power sampler's window)."""
    started = clock()
    for _ in range(timing.warmup_steps):
        step()
        if agree(clock() - started >= timing.warmup_cap_s):
            break
    sync()
    before = clock()
    step()
    sync()
    per_batch = agree(max(1, int(timing.batch_s / max(clock() - before, 1e-9))))
    if on_timed:
        on_timed(True)
    rates, started = [], clock()
    while True:
        begin = clock()
        for _ in range(per_batch):
            step()
        sync()
        end = clock()
        rates.append(per_batch / max(end - begin, 1e-9))
        mean, half = interval(rates)
        stable = len(rates) >= timing.min_batches and half <= timing.rel_half_width * mean
        capped = end - started >= timing.timed_cap_s or len(rates) >= timing.max_batches
        if agree(stable or capped):
            break
    if on_timed:
        on_timed(False)
    return Rate(mean, max(0.0, mean - half), mean + half, per_batch * len(rates), bool(stable))
