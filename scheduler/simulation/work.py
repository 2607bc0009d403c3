"""A simulated job's runs under the job contract: progress, checkpoints, interruptions and
the restart overhead (docs/simulation.md, "Checkpoints and restarts").

A run trains from the step it resumed at and checkpoints every `checkpoint_interval_s`
seconds of training (a job without one never does). An interruption (a move, a preemption,
a GPU failure) sends the job back to its last checkpoint (step 0 without one): the GPU time
spent on the steps since then is lost. The next run first pays the workload's restart
overhead (start, load the checkpoint, warm up: the GPUs are held, no step is made), lost too.
A job's GPU time is its share of its GPUs: all of them alone, half of one it shares with
another job, so the losses of all jobs add up against the GPU time of the busy GPUs.
"""
from collections import defaultdict
from dataclasses import dataclass, field

from scheduler.optimizer.problem import Placement

from .jobs import SimJob

HOUR_S = 3600.0


@dataclass
class JobState:
    job: SimJob
    remaining: float  # steps left from where the current run is
    placement: Placement | None = None
    last_gpus: tuple[str, ...] = ()
    below_s: float = 0.0
    done_at: float | None = None
    held: dict = field(default_factory=lambda: defaultdict(float))  # this round: (config, partner workloads) -> seconds
    checkpoint_step: float = 0.0  # the latest checkpoint (0: none, a restart begins again)
    trained_s: float = 0.0  # seconds of training in the current run: the checkpoint clock
    overhead_left_s: float = 0.0  # restart overhead the current run has still to pay
    unsaved_gpu_s: float = 0.0  # GPU-seconds of training since the last checkpoint
    restart_due: bool = False  # interrupted after it started: its next run pays the restart overhead
    placed_at: float = 0.0  # when it was placed on its GPUs (the cool-down counts from here)
    preempted_at: list[float] = field(default_factory=list)
    moves: int = 0
    system_jobs_s: float = 0.0  # integral of the jobs in the system over its time there (finish-time fairness)
    active_s: float = 0.0  # its time in the system since it joined a round
    ftf_rho: float | None = None  # its finish-time fairness once it completed (tenants.py)
    measured: list[float] = field(default_factory=list)  # telemetry's rates where it runs now (keep_work)

    @property
    def step(self) -> float:
        return self.job.total_steps - self.remaining

    def preemptions_since(self, t: float) -> int:
        return sum(1 for at in self.preempted_at if at > t)


def gpu_share(placement: Placement) -> float:
    """GPUs a job holds, a shared GPU split between the jobs on it."""
    return len(placement.gpu_ids) / (1 + len(placement.partners))


def start_run(state: JobState, placement: Placement, now: float, overhead_s: float) -> None:
    """The job starts on new GPUs: first run, after a move, or resuming; a restart pays `overhead_s`."""
    state.placement, state.last_gpus, state.placed_at = placement, placement.gpu_ids, now
    state.overhead_left_s = overhead_s if state.restart_due else 0.0
    state.restart_due, state.trained_s = False, 0.0
    state.measured.clear()


def checkpoint_now(state: JobState) -> None:
    """The job saves where it is (a lease that ends at a round, as Gavel's jobs do)."""
    state.checkpoint_step, state.unsaved_gpu_s = state.step, 0.0


def interrupt(state: JobState) -> float:
    """Stop the run and go back to its last checkpoint; -> the GPU-seconds its lost steps took."""
    lost = state.unsaved_gpu_s
    state.remaining = state.job.total_steps - state.checkpoint_step
    state.placement, state.unsaved_gpu_s, state.overhead_left_s = None, 0.0, 0.0
    state.restart_due = True
    return lost


def progress(state: JobState, rate: float, dt: float) -> float:
    """Run a placed job `dt` seconds at `rate` steps/s: the restart overhead still due first,
    then training; -> the seconds of overhead paid."""
    overhead = min(dt, state.overhead_left_s)
    state.overhead_left_s -= overhead
    if rate > 0 and dt > overhead:
        _train(state, rate, dt - overhead)
    return overhead


def _train(state: JobState, rate: float, seconds: float) -> None:
    share, interval = gpu_share(state.placement), state.job.checkpoint_interval_s
    before, from_step = state.trained_s, state.step
    state.trained_s += seconds
    state.remaining -= rate * seconds
    state.unsaved_gpu_s += share * seconds
    if interval and state.trained_s // interval > before // interval:
        saved = state.trained_s // interval * interval  # the last checkpoint within these seconds
        state.checkpoint_step = min(state.job.total_steps, from_step + rate * (saved - before))
        state.unsaved_gpu_s = share * (state.trained_s - saved)


def seconds_to_finish(state: JobState, rate: float) -> float:
    """From now, at `rate`, restart overhead included."""
    return state.overhead_left_s + state.remaining / rate
