"""The executor interface: what the control plane asks of whatever runs its jobs.

An executor is asked for a snapshot (the inventory and every run it knows, GOGH's and
others'), to submit a placed job's run, and to signal a run (the preemption notice, then the
kill when the grace period is over). It keeps no state of its own: the control plane stores
what it submitted (scheduler.ExecutorRun) and repairs its view from each snapshot, so a sync
that failed half-way is made good by the next one. Plain data in and out, no Django.
"""
from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass, field

#: A run's state in GOGH's words (each executor maps its own onto these).
PENDING = "pending"  # accepted, waiting for resources
RUNNING = "running"
SUCCEEDED = "succeeded"  # exit status 0
FAILED = "failed"  # non-zero exit status (75 included: the contract's "resume me", see RunStatus)
CANCELLED = "cancelled"  # stopped by someone (GOGH's own kill, or an operator)
TIMEOUT = "timeout"  # ran past its time limit
NODE_FAIL = "node_fail"  # its node failed under it
PREEMPTED = "preempted"  # the executor's own preemption took it off
RUN_STATES = (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED)
ENDED = frozenset({SUCCEEDED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED})

#: The job contract's exit status for "preempted, resume me" (telemetry.agent.contract).
RESUME_EXIT_CODE = 75


class ExecutorError(Exception):
    """A command of the executor failed, timed out or printed what its parser does not know.
    `command`: what was run (argv joined); `message`: what went wrong, for the operator."""

    def __init__(self, command: str, message: str):
        super().__init__(f"{command}: {message}")
        self.command = command
        self.message = message


@dataclass(frozen=True)
class NodeStatus:
    """A node as the executor sees it. `gpus`: GPU type (the executor's name, e.g. Slurm's
    gres type) -> count; `up`: it can run jobs (not down, drained, draining or failed);
    `reason`: why not, as the executor says it."""

    name: str
    up: bool
    gpus: dict[str, int]
    reason: str = ""
    shards_per_gpu: int = 0  # >0: the executor can share one GPU between runs (Slurm's gres/shard)


@dataclass(frozen=True)
class RunStatus:
    """One run the executor knows (running, waiting, or ended recently enough to remember).
    `job_id`: the GOGH job it runs, read from its name; None for a run GOGH did not submit.
    `gpu_indexes`: the node's GPUs it holds (read back: the executor may choose them);
    `shared`: it holds a share of its GPU (a shard), not the whole GPU."""

    external_id: str
    job_id: int | None
    state: str
    node: str | None = None
    gpu_indexes: tuple[int, ...] = ()
    shared: bool = False
    exit_code: int | None = None
    reason: str = ""
    native_state: str = ""  # the executor's own word (e.g. Slurm's COMPLETING), for people
    user: str = ""
    started_at: float | None = None  # epoch seconds, as the executor stamped it
    ended_at: float | None = None


@dataclass(frozen=True)
class Snapshot:
    nodes: list[NodeStatus]
    runs: list[RunStatus]


@dataclass(frozen=True)
class Launch:
    """A placed job's run, as the round decided it: on `node`, `num_gpus` GPUs of `gpu_type`
    (the executor's type name), or, when `shares` is set, that many shares of one GPU of it (a
    co-located run). `environment`: the job contract's variables and the job's own;
    `output_path`: where the run's standard output goes (the control plane reads the
    contract's lines there); `account`: the tenant's account on the executor, if configured."""

    job_id: int
    node: str
    gpu_type: str
    num_gpus: int
    command: str
    environment: dict[str, str] = field(default_factory=dict)
    grace_s: int = 60
    shares: int | None = None
    account: str = ""
    output_path: str = ""


class Executor(ABC):
    """What runs GOGH's jobs. `pushes`: the control plane submits and signals runs through it
    (Slurm); False for GOGH's own agent, which pulls its node's assignments and reports back,
    so submit and signal have nothing to do and a snapshot has nothing to say."""

    name: str = ""
    pushes: bool = True

    @abstractmethod
    def snapshot(self, *, waiting_on: Collection[str] = ()) -> Snapshot:
        """The inventory and the runs, read together; ExecutorError if it cannot be read whole.
        `waiting_on`: external ids of runs whose end the control plane has not seen yet; those
        the executor no longer lists among its live runs are looked up in its accounting (a
        run it knows nothing of is left out: the caller decides what a lost run means)."""

    @abstractmethod
    def submit(self, launch: Launch) -> str:
        """Submit a run; its external id. ExecutorError when refused (nothing submitted)."""

    @abstractmethod
    def signal(self, external_id: str, *, kill: bool) -> None:
        """The preemption notice (SIGTERM to the run's processes: the job checkpoints and
        exits with RESUME_EXIT_CODE), or, with `kill`, the end of its grace period (the run is
        cancelled whatever it does). A run that has already ended is not an error."""
