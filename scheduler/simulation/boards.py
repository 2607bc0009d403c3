"""Each simulated GPU board's true speed: a spread between boards of one type, and ageing.

A board's true speed multiplies the true throughput of every job on it (a job on several
boards runs at its slowest board's pace: data-parallel steps wait for the last GPU).

- Spread (`variation`, e.g. 0.03): a fixed factor exp(N(0, variation)) per board, drawn from
  the seed; studies of GPU variability measure a few per cent between boards of one type.
- Ageing (`ageing`): every board loses 1 % of its speed per 100 days of age, from an age at
  the start drawn uniformly in 0..3 years; and `FAST_DECAY` boards (drawn from the seed among
  `fast_candidates`: `simulate` gives the first two servers of the layout's last type, V100 in
  Gavel's cluster, the fastest, which the jobs with the tightest T_min need) decay faster, linearly over part
  of the run: the first falls 10 % over the first half of the arrivals (then stays there), the
  others 5 % over all of them.

- Health signals (`signals`, health_signals.py): a board braked for heat runs at its clock
  ratio while it is.

`fell_at(gpu, drop)` says when a board's speed had fallen `drop` below its speed at the start
(the report's `slow_gpu_flagged_after_h` counts from there). Pure Python, no Django.
"""
import math
import random
from dataclasses import dataclass

from .health_signals import HealthSignals

DAY_S = 86400.0
AGEING_PER_DAY = 0.01 / 100
MAX_START_AGE_DAYS = 3 * 365.0
#: Drops of the fast-decaying boards, and over which share of the arrival span each falls.
FAST_DECAY = ((0.10, 0.5), (0.05, 1.0), (0.05, 1.0))
#: Age buckets of the report's prediction_mape_by_gpu_age, in days: [low, high).
AGE_BUCKETS = ((0, 365, "0-1y"), (365, 730, "1-2y"), (730, 1095, "2-3y"), (1095, float("inf"), "3y+"))


@dataclass(frozen=True)
class FastDecay:
    drop: float
    end_s: float  # the drop is reached linearly from 0 to here, then held


class Boards:
    def __init__(self, gpu_ids, *, seed: int = 0, variation: float = 0.0, ageing: bool = False,
                 span_s: float = 0.0, fast_candidates=None, signals: HealthSignals | None = None):
        """`span_s`: the arrivals' span (the fast decays happen within it); `fast_candidates`: the
        boards the fast-decaying ones are drawn from (default: all); `signals`: the boards' health
        signals, None: none."""
        rng = random.Random(f"boards:{seed}")
        ids = sorted(gpu_ids)
        self.variation, self.ageing, self.signals = variation, ageing, signals
        self.spread = {g: (math.exp(rng.gauss(0.0, variation)) if variation else 1.0) for g in ids}
        self.start_age_days = {g: (rng.uniform(0.0, MAX_START_AGE_DAYS) if ageing else 0.0) for g in ids}
        pool = sorted(fast_candidates) if fast_candidates is not None else ids
        chosen = rng.sample(pool, min(len(FAST_DECAY), len(pool))) if ageing and pool else []
        self.fast = {g: FastDecay(drop, max(span_s * share, DAY_S)) for g, (drop, share) in zip(chosen, FAST_DECAY)}

    @property
    def varies(self) -> bool:
        return bool(self.variation) or self.ageing or self.signals is not None

    def age_days(self, gpu: str, t: float) -> float:
        return self.start_age_days.get(gpu, 0.0) + t / DAY_S

    def speed(self, gpu: str, t: float) -> float:
        """The board's true speed at time `t`: spread x ageing x its fast decay x its brake."""
        factor = self.spread.get(gpu, 1.0)
        if self.signals is not None:
            factor *= self.signals.clock_ratio(gpu, t)
        if self.ageing:
            factor *= max(0.0, 1.0 - AGEING_PER_DAY * self.age_days(gpu, t))
            decay = self.fast.get(gpu)
            if decay is not None:
                factor *= 1.0 - decay.drop * min(1.0, t / decay.end_s)
        return factor

    def slowest(self, gpus, t: float) -> float:
        return min((self.speed(g, t) for g in gpus), default=1.0)

    def fell_at(self, gpu: str, drop: float) -> float | None:
        """When the board's speed had fallen `drop` (a fraction) below its speed at 0; None: never
        within its fast decay (slow ageing alone takes years to fall that far)."""
        decay = self.fast.get(gpu)
        if decay is None or decay.drop < drop - 1e-12:
            return None
        # speed(t) / speed(0) = (1 - a (d0 + t)) / (1 - a d0) x (1 - drop_f t / end): solved on a fine grid.
        steps = 10_000
        for i in range(steps + 1):
            t = decay.end_s * i / steps
            if self.speed(gpu, t) <= (1.0 - drop) * self.speed(gpu, 0.0) + 1e-12:
                return t
        return decay.end_s


def age_bucket(days: float) -> str:
    return next(name for low, high, name in AGE_BUCKETS if low <= days < high)
