"""Each GPU's own speed: its throughput over what the other boards of its type measured doing the
same work, learnt from the jobs it ran.

Boards of one type differ by a few per cent, and a board slows as it ages or degrades. A
measurement is a job's rate in one **cell**: its workload, GPU type, GPU count and layout, the
partner sharing its GPU and the power limit it ran at. Everything in the cell but the boards is
the same for every board that measures it, so a measurement is compared with the mean log rate
of the cell's measurements on *other* boards (none of the job's own: a pair of boards that ran a
job together, compared with each other, would teach nothing), and an exponentially weighted mean
of what is left is each of its boards' part. Nothing predicted enters it: no predictor's error,
no co-location or multi-GPU estimate, no power-limit curve, learnt or not, and none of their drift
as they learn. Read against the round's prediction per (workload, type), as before, the boards
took all of these (docs/gpu_health.md gives the figures), so a limit curve that was off moved the
boards, and the curve, read over the boards' speeds, took their error back. A board's own
measurements stay out of its baseline: with a plain mean over all boards, a board one of four
that lost 10 % read as 8-9 % slow and was flagged later; one that alone ran its cells was never
flagged. Until another board has measured the cell, a measurement teaches nothing about the board.

A recent observation weighs more (half-life in observations), so a board that drifts slower is
followed within a few jobs. A board is planned at its factor once `min_observations` measurements
back it (`planned_speed`; 1.0 before): the slowest of a type's boards sets the type's plan, and
among many boards measured once or twice the slowest is the noisiest reading, not a slow board.
A board whose factor falls below `1 - flag_drop` with at least `min_observations` behind it is
flagged.
Pure Python, no Django: the control plane and `simulate` use the same tracker and rule.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

MIN_OBSERVATIONS = 5


def planned_speed(factor: float, observations: int, min_observations: int = MIN_OBSERVATIONS) -> float:
    """The speed a round plans a board at and divides its jobs' readings by: its learnt factor
    once `min_observations` measurements back it, 1.0 before."""
    return factor if observations >= min_observations else 1.0


class Cell(NamedTuple):
    """What set a job's rate besides its boards: the same on every board that measures it."""

    workload: str
    gpu_type: str
    num_gpus: int = 1
    consolidated: bool = True
    partner: str | None = None  # the workload sharing its GPU
    limit_w: float | None = None  # the power limit it ran at (None: the default)


@dataclass(frozen=True)
class GpuSpeed:
    factor: float  # throughput over the other boards' of its type in the same cells
    std: float  # spread of the board's residuals (log scale); inf with fewer than two observations
    observations: int


class SpeedTracker:
    def __init__(self, half_life_obs: float = 8.0, flag_drop: float = 0.07, min_observations: int = MIN_OBSERVATIONS):
        if half_life_obs <= 0 or not 0 < flag_drop < 1 or min_observations < 1:
            raise ValueError("half_life_obs > 0, 0 < flag_drop < 1 and min_observations >= 1")
        self.alpha = 1.0 - 0.5 ** (1.0 / half_life_obs)
        self.flag_drop = flag_drop
        self.min_observations = min_observations
        # cell -> {the boards of a measurement: (sum, n) of their log rates}
        self._cells: dict[Cell, dict[frozenset[str], tuple[float, int]]] = {}
        self._gpu: dict[str, tuple[float, float, int]] = {}  # gpu -> (ewma, ewm variance, n)

    def observe(self, gpus, cell: Cell, measured: float) -> bool:
        """Take one measurement (steps/s) of `cell` on the boards `gpus` (a job on several moves
        at its slowest board's pace: each of them is given the measurement); False (and nothing
        learnt) where it is not a positive finite number."""
        if not _positive(measured) or not gpus:
            return False
        rate, boards = math.log(measured), frozenset(gpus)
        sets = self._cells.setdefault(cell, {})
        # The baseline: the cell's measurements on boards none of which is one of these (a pair
        # of boards that ran a job together compared with each other would teach nothing).
        others = [(total, n) for key, (total, n) in sets.items() if not key & boards]
        total, n = sets.get(boards, (0.0, 0))
        sets[boards] = (total + rate, n + 1)
        if not others:
            # No other board has measured the cell: nothing to tell the boards from the cell.
            return True
        residual = rate - sum(t for t, _ in others) / sum(k for _, k in others)
        for gpu in boards:
            ewma, var, count = self._gpu.get(gpu, (0.0, 0.0, 0))
            delta = residual - ewma
            ewma += self.alpha * delta if count else delta
            var = (1 - self.alpha) * (var + self.alpha * delta * delta) if count else 0.0
            self._gpu[gpu] = (ewma, var, count + 1)
        return True

    def speed(self, gpu: str) -> GpuSpeed:
        ewma, var, count = self._gpu.get(gpu, (0.0, 0.0, 0))
        return GpuSpeed(math.exp(ewma), math.sqrt(var) if count > 1 else math.inf, count)

    def planned(self, gpu: str) -> float:
        """The board's speed as a round plans it (planned_speed)."""
        s = self.speed(gpu)
        return planned_speed(s.factor, s.observations, self.min_observations)

    def flag(self, gpu: str) -> str | None:
        """Why the board is flagged as slow, or None."""
        s = self.speed(gpu)
        if s.observations < self.min_observations or s.factor >= 1.0 - self.flag_drop:
            return None
        return (f"runs at {s.factor:.0%} of its type's other boards' speed (from {s.observations} measurements, "
                f"the recent ones weighted most; flagged below {1 - self.flag_drop:.0%})")

    def state(self) -> dict:
        """What the tracker knows, as plain data, for a caller that keeps it between measurements
        (the control plane replays the stored measurements instead: scheduler/gpu_speed_learning.py)."""
        return {"cells": [[*cell, sorted(boards), total, n] for cell, sets in self._cells.items()
                          for boards, (total, n) in sets.items()],
                "gpus": [[g, e, v, n] for g, (e, v, n) in self._gpu.items()]}

    def load(self, state: dict) -> None:
        self._cells = {}
        for *cell, boards, total, n in state.get("cells", []):
            self._cells.setdefault(Cell(*cell), {})[frozenset(str(g) for g in boards)] = (float(total), int(n))
        self._gpu = {str(g): (float(e), float(v), int(n)) for g, e, v, n in state.get("gpus", [])}


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0
