"""Jobs keep their work: what moving or stopping a placed or running job throws away, written
into its JobSpec so that every solver (they all work on the aggregated instance) honours it
without knowing why (docs/optimization.md, "Moves that pay for themselves").

A job that stops loses the steps since its last checkpoint (all of its progress when it never
checkpointed) and pays its workload's restart overhead before it progresses again. So:

- admission levels: `priority = 2 p + 1` for a job with a current placement, `2 p` for a
  waiting one, so a placed job is never dropped for waiting jobs of its own priority or lower,
  while a waiting job of a higher priority still outranks it (preemption by priority); a job
  preempted `max_preemptions_per_hour` times in the last hour gets a level above every other;
- `move_penalty_w`: the energy a move throws away (redoing the steps since the checkpoint, and
  the restart overhead, at the job's power), spread over its predicted remaining time (at most
  MOVE_HORIZON_S), plus the hysteresis margin and the flat `migration_cost_w`, so a move is
  chosen only when its saving over that time beats what it costs;
- `pinned`: placed or moved less than `move_cooldown_s` ago, or moved `max_moves_per_job` times
  already, it keeps its configuration;
- `work_at_risk`: GPU-seconds lost if it stopped now; among the jobs of one level the
  admission values keep those with the most at risk, so victims lose the least work.

A service replica (JobSpec.service, docs/services.md) has no steps to redo: what it answered
is done. A move still restarts it, and while it restarts it drops the requests in flight and
leaves its share of the traffic to its other replicas, against a latency SLO; so its
`move_penalty_w` is SERVICE_MOVE_FACTOR times what a training job pays for the same restart
(service_move_penalty_w): a round moves a replica to save energy only where the saving is one and
a half times what would move a training job. (Where a replica and its training partner must part,
placement.py keeps the replica on its GPU; candidates.py stops keeping a shared GPU where the
replica misses its T_min.)

A job running on a board at risk (GpuSpec.at_risk, telemetry/gpu_health.py: error counts rose, a failing XID)
leaves it at its next checkpoint, before the failure the rule expects throws away its work since
that checkpoint: at the first round where a move loses at most LEAVE_AT_RISK_S of its work
(`leaves_at_risk`), it is `leaving`: neither the cool-down nor the move budget holds it, and
placement does not keep it on its GPUs; until then it is pinned (the board takes no new job,
at_risk.py, and the job leaves at its checkpoint, not before). Its configuration stays offered as its current one, so
it keeps it on other boards unless another pays for the move as any move must; placement gives
it no board at risk, tries its other configurations where its own finds no room, and leaves it
where it is only where none has room (placement.py). It keeps its protected level. A job that
never checkpointed would throw away all its progress, now or at the failure: it leaves now where
the work it expects to lose at the failure, if the board fails before it ends (failure_loss_s: an
exponential lifetime of mean AT_RISK_MEAN_LIFE_S), is more than a move throws away now; one
about to end stays.

A running job whose measurements where it runs (on its GPUs, with its partners there) put it
below its T_min (`below_tmin`: by BELOW_TMIN_Z standard errors) is planned at its measured rate,
not its prediction, alone or in the group it shares now, and moves
where a configuration is predicted to meet T_min at a rate at which the move pays
(below_tmin.py), at its next checkpoint (as a job leaving a board at risk: a move then throws away at
most LEAVE_AT_RISK_S of its work) or sooner where what it lacks by staying, its shortfall over its
remaining steps, outweighs what a move throws away (`worth_moving_below`); the move budget does
not hold it.

A probe (exploration.py) is a measurement on the GPUs it was given: it is pinned (moving it to
save energy would measure another configuration), and it never climbs above other jobs after
preemptions (admission.probes_last keeps every probe below every other job, so any of them may
preempt it).
"""
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .problem import JobSpec, SolverSettings

# A move's saving is credited over at most this much of the job's remaining time: the energy
# weight (it follows the load) and the predictions that make it a saving change within hours,
# and credited over a days-long remaining time any saving paid for a restart, so long jobs went
# back and forth as the load rose and fell (docs/optimization.md).
MOVE_HORIZON_S = 3600.0
#: A replica's move costs this many times a training job's move of the same restart overhead
#: and power: dropped requests and a latency spike are worse than a training job's lost time. At 4,
#: replicas stayed alone where a training partner could have joined them (simulate --services:
#: the serving GPUs' utilisation 1.76 x dedicated's on seed 0); at 1 and 2 the 3x spike took three
#: rounds to absorb; at 1.5 it took two on seeds 0-2 (docs/simulation.md, issue 21's figures).
SERVICE_MOVE_FACTOR = 1.5
#: A job on a board at risk leaves it once a move throws away at most this much of its work: within
#: a round of its checkpoint in simulate (rounds of 6 min), and in the control plane (rounds of
#: 30 s) about what a failure costs, on average, a job checkpointing every 20 minutes.
LEAVE_AT_RISK_S = 600.0
#: A board at risk is expected to fail after an exponentially distributed time of this mean, from
#: now: what a job that never checkpointed expects to lose by staying on it (leaves_at_risk). No
#: fleet's failures are at hand to fit it; the field studies behind the at-risk rule saw memory
#: errors precede failures by hours (simulate --health draws 6-24 h, docs/gpu_health.md).
AT_RISK_MEAN_LIFE_S = 12 * 3600.0
#: A job is measured below its T_min where it runs once the mean of its measurements there is below
#: T_min by this many standard errors, over at least MIN_MEASUREMENTS of them: one reading is noise
#: (simulate's telemetry: 5 % a round), and a job moved on noise pays a restart for nothing.
BELOW_TMIN_Z = 2.0
MIN_MEASUREMENTS = 5


@dataclass(frozen=True)
class MeasuredRate:
    """What a job's telemetry measured where it runs now (its current GPUs, partners and limit)."""

    mean: float  # steps/s
    std: float  # the measurements' standard deviation
    count: int

    @classmethod
    def of(cls, rates: Sequence[float]) -> "MeasuredRate | None":
        """The measurements' mean and spread (None: none yet)."""
        if not rates:
            return None
        return cls(statistics.fmean(rates), statistics.stdev(rates) if len(rates) > 1 else 0.0, len(rates))

    def surely_below(self, t_min: float) -> bool:
        """Below `t_min` by BELOW_TMIN_Z standard errors, over at least MIN_MEASUREMENTS."""
        if self.count < MIN_MEASUREMENTS:
            return False
        return self.mean + BELOW_TMIN_Z * self.std / math.sqrt(self.count) < t_min


@dataclass(frozen=True)
class RunningWork:
    """What a placed or running job would lose if it stopped now."""

    steps_since_checkpoint: float  # current_step - (checkpoint_step or 0): all progress without a checkpoint
    remaining_steps: float | None  # total_steps - current_step; None: unknown
    steps_per_s: float | None  # its current rate (observed, else predicted); None: unknown
    power_w: float | None  # its current power, all its GPUs; None: unknown
    num_gpus: int
    restart_overhead_s: float
    placed_s_ago: float  # seconds since it was placed or moved (cool-down)
    preemptions_last_hour: int
    running: bool  # started (False: placed, not started: nothing lost but the placement)
    moves: int = 0  # times a round has moved it so far
    measured: MeasuredRate | None = None  # its telemetry where it runs now, beside its partners; None: none
    checkpointed: bool = True  # it saved at least once (False: a stop throws away all its progress)


def keep_work(
    jobs: Sequence[tuple[JobSpec, RunningWork | None]], settings: SolverSettings, at_risk: frozenset[str] = frozenset()
) -> tuple[JobSpec, ...]:
    """The jobs rewritten (see the module's text); a job without RunningWork (waiting) only
    moves to its level 2 p, so a problem where nothing is placed decides as before. `at_risk`:
    the ids of the boards at risk (GpuSpec.at_risk)."""
    top = 2 * max((spec.priority for spec, _ in jobs), default=0) + 2
    return tuple(_kept(spec, work, settings, top, at_risk) for spec, work in jobs)


def _kept(spec: JobSpec, work: RunningWork | None, settings: SolverSettings, top: int,
          at_risk: frozenset[str]) -> JobSpec:
    if work is None:
        return replace(spec, priority=2 * spec.priority)
    at_limit = work.preemptions_last_hour >= settings.max_preemptions_per_hour and not spec.probe
    on_risk = spec.current is not None and not at_risk.isdisjoint(spec.current.gpu_ids)
    leaves = on_risk and leaves_at_risk(work)
    below = None if spec.service or spec.probe else below_tmin(spec, work)
    return replace(
        spec,
        priority=top if at_limit else 2 * spec.priority + 1,
        move_penalty_w=service_move_penalty_w(work, settings) if spec.service else move_penalty_w(work, settings),
        pinned=not leaves and (
            on_risk or spec.probe or work.placed_s_ago < settings.move_cooldown_s
            or (work.moves >= settings.max_moves_per_job and below is None)
        ),
        work_at_risk=work_at_risk(work),
        leaving=leaves,
        measured_throughput=below[0] if below else None,
        move_pays_at=below[1] if below else None,
    )


def below_tmin(spec: JobSpec, work: RunningWork) -> tuple[float, float] | None:
    """(its measured rate, the least predicted rate at which a move pays) for a running job whose
    measurements where it runs (alone, or with its partners on a shared GPU: a group's prediction
    errs like any other, health seed 2 of simulate ran one job 0.5 % below its T_min beside its
    partner for 165 h) say it runs below its T_min (MeasuredRate.surely_below)
    and for which a move now is worth the work it throws away (worth_moving_below), whatever its
    prediction says; None otherwise, or where no move can pay. A move pays where the job, redoing
    its steps since its checkpoint and paying its restart overhead, still ends sooner than where it
    is: (remaining + since checkpoint) / rate' + overhead < remaining / measured; so
    rate' > (remaining + since checkpoint) / (remaining / measured - overhead), and at least T_min.
    With its total steps unknown it runs on, and any configuration meeting T_min pays. This is the
    one predicate of a move below T_min: the round's (keep_work) and simulate's (the round it solves)."""
    rate = work.measured
    if not work.running or rate is None:
        return None
    if not rate.surely_below(spec.min_throughput) or rate.mean <= 0:
        return None
    if not worth_moving_below(spec.min_throughput, rate.mean, work):
        return None
    if work.remaining_steps is None:
        return rate.mean, spec.min_throughput
    stay_s = work.remaining_steps / rate.mean
    if stay_s <= work.restart_overhead_s:
        return None
    pays_at = (work.remaining_steps + work.steps_since_checkpoint) / (stay_s - work.restart_overhead_s)
    return rate.mean, max(pays_at, spec.min_throughput)


def worth_moving_below(t_min: float, measured: float, work: RunningWork) -> bool:
    """Whether a job running at `measured` below `t_min` may move now: at its checkpoint (a move
    throws away at most LEAVE_AT_RISK_S of its work), or where what it lacks by staying outweighs
    what a move throws away. Staying, its remaining steps take remaining / measured instead of
    remaining / t_min: that difference (its shortfall, seconds behind its contract) against the
    seconds a move redoes and restarts (redo_s). A job just below T_min waits for its checkpoint,
    one far below with long to run moves at once, and one that never checkpoints moves while its
    shortfall is still larger than its progress. With its total steps unknown, only the checkpoint
    bound: ending sooner alone let a job a few per cent below T_min throw away hours of work on
    several GPUs (simulate --health, seed 1: 70 GPU-hours for one four-GPU job, docs/simulation.md)."""
    if thrown_away_s(work) <= LEAVE_AT_RISK_S:
        return True
    if work.remaining_steps is None:
        return False
    shortfall_s = work.remaining_steps / measured - work.remaining_steps / t_min
    return shortfall_s > redo_s(work)


def leaves_at_risk(work: RunningWork) -> bool:
    """Whether a job on a board at risk leaves it this round: it has not started, or the work a
    move throws away (its steps since its checkpoint at its rate; unknown rate: all its time since
    it was placed) is at most LEAVE_AT_RISK_S (the restart overhead is not counted: a failure
    costs it too), or it never checkpointed and the work it expects to lose by staying is more than
    a move throws away now (failure_loss_s). A job that checkpoints waits for its checkpoint: what
    it would lose at a failure is then bounded by one interval."""
    if not work.running or thrown_away_s(work) <= LEAVE_AT_RISK_S:
        return True
    if work.checkpointed or work.remaining_steps is None or not work.steps_per_s:
        return False
    return failure_loss_s(redo_s(work), work.remaining_steps / work.steps_per_s) > redo_s(work)


def failure_loss_s(lost_now_s: float, left_s: float, mean_life_s: float = AT_RISK_MEAN_LIFE_S) -> float:
    """Seconds a job with no checkpoint expects to lose by staying on a board at risk, where a stop
    now costs it `lost_now_s` (its progress and restart, redo_s): the board fails after an
    exponential time F of mean `mean_life_s`; if F comes before the job ends (in `left_s`), it
    loses `lost_now_s` and the F seconds it ran since. With x = left_s / mean: lost_now x
    (1 - e^-x) + mean x (1 - e^-x (1 + x)). A job about to end expects to lose little, one with
    many hours left nearly what a stop costs now and up to a mean lifetime more."""
    x = left_s / mean_life_s
    survive = math.exp(-x)
    return lost_now_s * (1.0 - survive) + mean_life_s * (1.0 - survive * (1.0 + x))


def thrown_away_s(work: RunningWork) -> float:
    """Seconds of a running job's work a stop throws away: its steps since its checkpoint at its
    rate (unknown rate: all the time since it was placed, the most it can have run)."""
    since = work.steps_since_checkpoint / work.steps_per_s if work.steps_per_s else work.placed_s_ago
    return max(since, 0.0)


def redo_s(work: RunningWork) -> float:
    """Seconds a restart costs before the job is back where it is: the steps since its checkpoint
    at its rate (unknown rate: all the time since it was placed, the most it can have run), plus
    the restart overhead. 0 for a job that has not started."""
    return thrown_away_s(work) + work.restart_overhead_s if work.running else 0.0


def remaining_s(work: RunningWork, settings: SolverSettings) -> float:
    """Seconds over which a move must pay for itself: the predicted time left at its current
    rate, at most MOVE_HORIZON_S; unknown (no total steps or rate): the cool-down, so a move
    pays for itself before the job may move again. At least 1 s."""
    if work.remaining_steps is None or not work.steps_per_s:
        return max(settings.move_cooldown_s, 1.0)
    return min(max(work.remaining_steps / work.steps_per_s, 1.0), MOVE_HORIZON_S)


def move_penalty_w(work: RunningWork, settings: SolverSettings) -> float | None:
    """(redo energy + restart overhead energy) / remaining time x (1 + hysteresis) +
    migration_cost_w, in W; None (the flat migration_cost_w) for a job not started or of
    unknown power."""
    if not work.running or work.power_w is None:
        return None
    lost_j = redo_s(work) * work.power_w
    return lost_j / remaining_s(work, settings) * (1.0 + settings.move_hysteresis) + settings.migration_cost_w


def service_move_penalty_w(work: RunningWork, settings: SolverSettings) -> float:
    """A service replica's move, in W: SERVICE_MOVE_FACTOR x (its restart overhead at its
    power over the cool-down x (1 + move_hysteresis) + migration_cost_w); nothing to redo. One
    not started or of unknown power: SERVICE_MOVE_FACTOR x migration_cost_w."""
    restart_w = 0.0
    if work.running and work.power_w is not None:
        restart_w = work.restart_overhead_s * work.power_w / max(settings.move_cooldown_s, 1.0)
    return SERVICE_MOVE_FACTOR * (restart_w * (1.0 + settings.move_hysteresis) + settings.migration_cost_w)


def work_at_risk(work: RunningWork) -> float:
    """GPU-seconds a stop throws away: the redo time on all of its GPUs."""
    return redo_s(work) * work.num_gpus
