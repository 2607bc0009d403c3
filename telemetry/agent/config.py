"""The agent's settings, one dataclass filled from the command line (telemetry.agent.cli)."""
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class AgentConfig:
    hostname: str
    log_dir: Path
    labels: dict = field(default_factory=dict)
    cell: str = ""
    sample_interval_s: float = 1.0  # >= 1 Hz
    upload_interval_s: float = 5.0
    heartbeat_interval_s: float = 15.0  # a quarter of the control plane's default timeout (60 s)
    poll_interval_s: float = 2.0
    progress_interval_s: float = 10.0
    buffer_size: int = 86_400  # a day of one GPU at 1 Hz, an hour and a half of 16 GPUs
    batch_size: int = 500
    grace_s: float = 10.0
    retry_s: float = 5.0
    # By this long after its last successful heartbeat the node's jobs are gone (SIGTERM
    # grace_s before, SIGKILL at it): the control plane gives a silent node up at its heartbeat
    # timeout (GOGH_NODE_HEARTBEAT_TIMEOUT_S) and places its jobs elsewhere, so they would run
    # twice. The control plane's answers lower it to fit its timeout (fence_after_s).
    fence_after_s: float = 60.0
    # Jobs checkpoint into <checkpoint_dir>/job-<id> (None: <log_dir>/checkpoints); shared
    # storage lets a job moved to another node resume there.
    checkpoint_dir: Path | None = None
    simulate_seed: int | None = None  # set: run every job as a simulated job (simjob) with this seed
    simulate_speedup: float = 1.0
    simulate_throughputs: Path | None = None  # Gavel's file, the simulated jobs' truth (None: simjob's default)
    # With simulate_seed: a job that has a command runs it (a real process, e.g. a training job on
    # the CPU) on the simulated GPUs, and only a job without one runs as a simulated job.
    simulate_run_commands: bool = False
    simulate_checkpoint_interval_s: float = 60.0  # simulated jobs checkpoint this often (real time; 0: never)
    # A node whose jobs a cluster manager (Slurm) runs: register, heartbeat and sample only; never
    # ask for assignments, never run a job, and do not take the node down when leaving.
    observe: bool = False

    @property
    def job_checkpoint_root(self) -> Path:
        return self.checkpoint_dir or self.log_dir / "checkpoints"
