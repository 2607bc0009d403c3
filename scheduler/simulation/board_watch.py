"""What one policy's run knows and measures about the boards and their power limits.

- The policy's learnt speed of each board (`telemetry.gpu_speed.SpeedTracker`, the control
  plane's rule): a learning policy feeds it every round's observed throughput of each job on
  each of its boards, in its cell (workload, type, GPUs, partner, limit: the tracker compares
  it with the other boards' in the same cell); the solver plans each GPU at its learnt speed
  once 5 measurements back it, at 1.0 before (`GpuSpec.speed`, telemetry.gpu_speed.planned_speed,
  the control plane's rule), and a job's readings are divided by that speed before P2 and the
  limit curves learn from them. The oracle plans at the boards' true speeds, the other policies at 1.
- The report's figures: `power_limit_share` (GPU-hours at a limit below the default over all
  busy GPU-hours), `prediction_mape_by_gpu_age` (per board-age bucket, the mean absolute
  percentage error of the per-board prediction, the type's prediction x the planned speed of the
  job's slowest board, against the true throughput, counted once every board of the placement
  has been measured `MIN_OBSERVATIONS` times, the issue's "after 10 observations per GPU": a
  board's measurements, not the tracker's comparisons, of which a board gets one only where
  another board measured the same cell, so that they come late and leave most placements
  unscored) and `slow_gpu_flagged_after_h` (for the boards whose speed fell 10 %: hours from
  then to the first observation at or after it at which the tracker flags the board (its
  current flag, as the console shows it: a board flagged before and still flagged then counts
  0), the worst of them; null if one never was, or none fell that far).
- Health (`simulate --health`, health_signals.py): a policy that uses the health rule reads
  each signalled board as the agent would, every round, through telemetry.gpu_health.health_of,
  and plans it as the control plane does (telemetry.gpu_health.board_plan: at risk or braked,
  flagged; braked, at its clock ratio; at risk, its running jobs leave it at their next
  checkpoint, optimizer/keep_work.py). `failed_gpu_work_lost_gpu_h`: GPU-hours of work lost on
  boards that failed (any policy); `at_risk_flagged_before_failure_h`: for the warned boards that
  failed, hours from the board's first at-risk flag to its failure, the least of them (null
  where the policy does not use the rule, a board failed unflagged, or none failed).
"""
import statistics
from collections import defaultdict

from telemetry.gpu_health import BoardPlan, board_plan, health_of
from telemetry.gpu_speed import Cell, SpeedTracker

from .boards import Boards, age_bucket

MIN_OBSERVATIONS = 10
SLOW_DROP = 0.10
HOUR_S = 3600.0


class BoardWatch:
    def __init__(self, boards: Boards, *, learns: bool, truth_speeds: bool, health: bool = False):
        """`health`: a learning policy uses the health rule on the boards' signals (if they have any)."""
        self.boards, self.truth_speeds = boards, truth_speeds
        self.signals = boards.signals if health and learns else None
        self.health: dict[str, dict] = {}  # a signalled board -> its health as the control plane keeps it
        self.at_risk_at: dict[str, float] = {}  # a board -> when it was first at risk
        self.failed_at: dict[str, float] = {}
        self.failed_lost_s = 0.0
        self.tracker = SpeedTracker() if learns else None
        self.fell_at = {g: t for g in boards.fast if (t := boards.fell_at(g, SLOW_DROP)) is not None}
        self.flagged_at: dict[str, float] = {}  # a fallen board -> its first flag at or after its fall
        self.errors: dict[str, list[float]] = defaultdict(list)
        self.measured: dict[str, int] = defaultdict(int)  # a board -> jobs' rounds measured on it
        self.busy_gpu_s = 0.0
        self.limited_gpu_s = 0.0

    def planned_speed(self, gpu: str, t: float) -> float:
        if self.tracker is not None:
            return self.plan(gpu).speed
        return self.boards.speed(gpu, t) if self.truth_speeds else 1.0

    def planned_slow(self, gpu: str) -> bool:
        """Whether the round plans the board as flagged slow (GpuSpec.slow): the learning
        policies' tracker or the board's health flags it; policies that know the truth plan its
        speed and need no flag."""
        return self.tracker is not None and self.plan(gpu).slow

    def planned_at_risk(self, gpu: str) -> bool:
        """Whether the round plans the board at risk (GpuSpec.at_risk: its jobs leave it)."""
        return self.tracker is not None and self.plan(gpu).at_risk

    def plan(self, gpu: str) -> BoardPlan:
        """A learning policy's plan of the board, by the control plane's rule (board_plan)."""
        return board_plan(self.tracker.planned(gpu), self.tracker.flag(gpu) is not None,
                          self.health.get(gpu, {}))

    def read_health(self, alive, t: float) -> bool:
        """Read each live signalled board's health at `t`; whether any board's plan (its speed, its
        flag) changed: a reason that only counts one more row does not make the round solve."""
        if self.signals is None:
            return False
        changed = False
        for gpu in sorted(self.signals.signalled() & set(alive)):
            before = self._health_plan(gpu)
            self.health[gpu] = health_of(self.signals.sample(gpu, t), self.health.get(gpu, {}))
            if self.health[gpu].get("at_risk"):
                self.at_risk_at.setdefault(gpu, t)
            changed |= self._health_plan(gpu) != before
        return changed

    def _health_plan(self, gpu: str) -> BoardPlan:
        """What the board's health alone makes of its plan (a board of speed 1, not flagged)."""
        return board_plan(1.0, False, self.health.get(gpu, {}))

    def failed(self, gpu: str, t: float, lost_gpu_s: float) -> None:
        """A board failed at `t`, losing `lost_gpu_s` of its jobs' work."""
        self.failed_at.setdefault(gpu, t)
        self.failed_lost_s += lost_gpu_s

    def planned_slowest(self, gpus) -> float:
        """The slowest of the boards' speeds as the round plans them (SpeedTracker.planned)."""
        return min((self.tracker.planned(g) for g in gpus), default=1.0)

    def observe(self, gpus, cell: Cell, measured: float, t: float) -> None:
        """One round's observed throughput of a job in `cell` on `gpus`."""
        if self.tracker is None:
            return
        self.tracker.observe(gpus, cell, measured)
        for gpu in gpus:
            self.measured[gpu] += 1
            fell = self.fell_at.get(gpu)
            if fell is not None and t >= fell and gpu not in self.flagged_at and self.tracker.flag(gpu):
                self.flagged_at[gpu] = t

    def score(self, gpus, t: float, predicted: float | None, true: float) -> None:
        """The per-board prediction's error, once every board of the placement has enough behind it."""
        if self.tracker is None or not predicted or true <= 0:
            return
        if any(self.measured[g] < MIN_OBSERVATIONS for g in gpus):
            return
        estimate = predicted * self.planned_slowest(gpus)
        oldest = max(self.boards.age_days(g, t) for g in gpus)
        self.errors[age_bucket(oldest)].append(abs(estimate - true) / true)

    def held(self, gpus: int, limited: bool, dt: float) -> None:
        self.busy_gpu_s += gpus * dt
        if limited:
            self.limited_gpu_s += gpus * dt

    def metrics(self) -> dict:
        return {
            "power_limit_share": round(self.limited_gpu_s / self.busy_gpu_s, 4) if self.busy_gpu_s else 0.0,
            "prediction_mape_by_gpu_age": {
                bucket: round(statistics.fmean(values), 4) for bucket, values in sorted(self.errors.items())
            },
            "slow_gpu_flagged_after_h": self._flag_delay_h(),
            "failed_gpu_work_lost_gpu_h": round(self.failed_lost_s / HOUR_S, 3),
            "at_risk_flagged_before_failure_h": self._warning_h(),
        }

    def _warning_h(self) -> float | None:
        if self.signals is None:
            return None
        failed = [g for g in self.signals.warned if g in self.failed_at]
        if not failed or any(g not in self.at_risk_at or self.at_risk_at[g] > self.failed_at[g] for g in failed):
            return None
        return round(min(self.failed_at[g] - self.at_risk_at[g] for g in failed) / HOUR_S, 2)

    def _flag_delay_h(self) -> float | None:
        if self.tracker is None:
            return None
        if not self.fell_at or any(g not in self.flagged_at for g in self.fell_at):
            return None
        return round(max(self.flagged_at[g] - fell for g, fell in self.fell_at.items()) / HOUR_S, 2)
