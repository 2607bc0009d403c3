"""Each GPU's own speed: its throughput over its type's prediction, learnt from the jobs it ran.

Boards of one type differ by a few per cent, and a board slows as it ages or degrades. A
measurement of a job on a GPU is a ratio measured / predicted; the log of that ratio holds the
predictor's error for that workload on that type (shared by every board of the type) and the
board's own deviation. The tracker keeps, per (workload, type), the log ratios' sum and count
over all boards, and per (workload, type, board) the board's own: a board's measurement is
compared with the mean of the *other* boards' (the predictor's part, leave-one-out), and an
exponentially weighted mean of what is left is the board's part. So a board that only ever ran
one badly predicted workload is not blamed for the predictor, and a board that slows is not
measured against a baseline its own slow measurements pull down (with a plain mean over all
boards, a board one of four that lost 10 % read as 8-9 % slow and was flagged later; one that
alone ran its workloads was never flagged). Until another board has run the workload on the
type, a measurement teaches nothing about the board.

A recent observation weighs more (half-life in observations), so a board that drifts slower is
followed within a few jobs. A board whose factor falls below `1 - flag_drop` with at least
`min_observations` behind it is flagged. Pure Python, no Django: the control plane and
`simulate` use the same tracker.
"""
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpeed:
    factor: float  # throughput over the type's prediction, the predictor's own error taken out
    std: float  # spread of the board's residuals (log scale); inf with fewer than two observations
    observations: int


class SpeedTracker:
    def __init__(self, half_life_obs: float = 8.0, flag_drop: float = 0.07, min_observations: int = 5):
        if half_life_obs <= 0 or not 0 < flag_drop < 1 or min_observations < 1:
            raise ValueError("half_life_obs > 0, 0 < flag_drop < 1 and min_observations >= 1")
        self.alpha = 1.0 - 0.5 ** (1.0 / half_life_obs)
        self.flag_drop = flag_drop
        self.min_observations = min_observations
        self._baseline: dict[tuple[str, str], tuple[float, int]] = {}  # (workload, type) -> (sum, n), all boards
        self._board: dict[tuple[str, str, str], tuple[float, int]] = {}  # (workload, type, gpu) -> (sum, n)
        self._gpu: dict[str, tuple[float, float, int]] = {}  # gpu -> (ewma, ewm variance, n)

    def observe(self, gpu: str, workload: str, gpu_type: str, predicted: float, measured: float) -> bool:
        """Take one measurement of `workload` on `gpu` (steps/s, measured against the type's
        prediction); False (and nothing learnt) where either is not a positive finite number."""
        if not (_positive(predicted) and _positive(measured)):
            return False
        ratio = math.log(measured / predicted)
        total, n = self._baseline.get((workload, gpu_type), (0.0, 0))
        own, own_n = self._board.get((workload, gpu_type, gpu), (0.0, 0))
        self._baseline[(workload, gpu_type)] = (total + ratio, n + 1)
        self._board[(workload, gpu_type, gpu)] = (own + ratio, own_n + 1)
        if n == own_n:
            # No other board has run the workload on the type: nothing to tell the board from the predictor.
            return True
        residual = ratio - (total - own) / (n - own_n)
        ewma, var, count = self._gpu.get(gpu, (0.0, 0.0, 0))
        delta = residual - ewma
        ewma += self.alpha * delta if count else delta
        var = (1 - self.alpha) * (var + self.alpha * delta * delta) if count else 0.0
        self._gpu[gpu] = (ewma, var, count + 1)
        return True

    def speed(self, gpu: str) -> GpuSpeed:
        ewma, var, count = self._gpu.get(gpu, (0.0, 0.0, 0))
        return GpuSpeed(math.exp(ewma), math.sqrt(var) if count > 1 else math.inf, count)

    def flag(self, gpu: str) -> str | None:
        """Why the board is flagged as slow, or None."""
        s = self.speed(gpu)
        if s.observations < self.min_observations or s.factor >= 1.0 - self.flag_drop:
            return None
        return (f"runs at {s.factor:.0%} of its type's predicted speed (from {s.observations} measurements, "
                f"the recent ones weighted most; flagged below {1 - self.flag_drop:.0%})")

    def state(self) -> dict:
        """What the tracker knows, as plain data, for a caller that keeps it between measurements
        (the control plane replays the stored measurements instead: scheduler/gpu_speed_learning.py)."""
        return {"baseline": [[w, t, total, n] for (w, t), (total, n) in self._baseline.items()],
                "boards": [[w, t, g, total, n] for (w, t, g), (total, n) in self._board.items()],
                "gpus": [[g, e, v, n] for g, (e, v, n) in self._gpu.items()]}

    def load(self, state: dict) -> None:
        self._baseline = {(w, t): (float(total), int(n)) for w, t, total, n in state.get("baseline", [])}
        self._board = {(w, t, str(g)): (float(total), int(n)) for w, t, g, total, n in state.get("boards", [])}
        self._gpu = {str(g): (float(e), float(v), int(n)) for g, e, v, n in state.get("gpus", [])}


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0
