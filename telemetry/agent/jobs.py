"""What the control plane asks this node to run, and the command that runs it.

An assignment is one job's open allocations on this node (GET /api/nodes/{id}/assignments/).
Its key is the job, when it was placed and its GPU indexes: when the key changes (migrated,
preempted and placed again), the running process is stopped and a new one started. New
allocation rows on the same GPUs (only the job's partners on the GPU changed) leave it running.
Where to resume and the job's grace period come with it (the job contract, docs/jobs.md).
So does the power limit chosen for each of its GPUs: a change of limit alone is no change of
key, so it never restarts the job (power.py applies it).
"""
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .contract import DEFAULT_GRACE_S

#: The folder above the telemetry package, put on a simulated job's PYTHONPATH.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
SIMULATED_DEFAULT_STEPS = 1000


@dataclass(frozen=True)
class Assignment:
    job_id: int
    allocation_ids: tuple[int, ...]
    gpu_indexes: tuple[int, ...]
    gpu_type: str
    workload: str
    partners: tuple[str, ...]  # workloads of the jobs sharing its GPU, () alone
    command: str
    environment: dict
    total_steps: int | None
    placed_at: str | None = None  # changes when the job is placed anew; None from servers before it
    resume_step: int = 0
    resume_checkpoint: str = ""  # "": none, start afresh
    preemption_grace_s: int = DEFAULT_GRACE_S
    # The control plane knows the job contract (it lists resume_step): it takes checkpoint
    # fields and "preempted" reports, which one from before refuses (unknown field, status).
    contract: bool = False
    # The power limit for each GPU of gpu_indexes, W (None: the board's default); () from a
    # control plane before power limits: every GPU at its default.
    power_limits_w: tuple[float | None, ...] = ()
    # The fraction of its default-limit throughput the round planned the job at under those
    # limits (None: at the default, or not said); only a simulated node acts on it.
    power_limit_speed: float | None = None

    @property
    def limits_by_gpu(self) -> dict[int, float | None]:
        return dict(zip(self.gpu_indexes, self.power_limits_w or (None,) * len(self.gpu_indexes)))

    @classmethod
    def from_api(cls, item: dict) -> "Assignment":
        limits = item.get("power_limits_w") or [None] * len(item["gpu_indexes"])
        by_gpu = sorted(zip(item["gpu_indexes"], limits), key=lambda pair: pair[0])
        return cls(
            job_id=item["job"],
            allocation_ids=tuple(sorted(item["allocations"])),
            gpu_indexes=tuple(index for index, _ in by_gpu),
            gpu_type=item["gpu_type"],
            workload=item["workload"],
            partners=tuple(item.get("partners") or ()),
            command=item.get("command") or "",
            environment=dict(item.get("environment") or {}),
            total_steps=item.get("total_steps"),
            placed_at=item.get("placed_at"),
            resume_step=item.get("resume_step") or 0,
            resume_checkpoint=item.get("resume_checkpoint") or "",
            preemption_grace_s=item.get("preemption_grace_s") or DEFAULT_GRACE_S,
            contract="resume_step" in item,
            power_limits_w=tuple(limit for _, limit in by_gpu) if "power_limits_w" in item else (),
            power_limit_speed=_speed(item.get("power_limit_speed")),
        )

    @property
    def key(self) -> tuple:
        """A job is restarted when this changes: placed anew (migrated, also on another node of
        a job spread over several, or preempted and placed again) or on other GPUs here. New
        allocation rows on the same GPUs because only its partners changed leave it running."""
        return self.job_id, self.placed_at, self.gpu_indexes


def partner_file(log_dir: Path, job_id: int) -> Path:
    """Where a simulated job reads its current partners, one workload name per line (the agent
    writes it)."""
    return log_dir / f"job-{job_id}.partner"


def _speed(value) -> float | None:
    """A planned speed under a power limit: a number in (0, 1], else None (ignored, full speed)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return None


def pace_file(log_dir: Path, job_id: int) -> Path:
    """Where a simulated job reads its pace under its GPUs' power limits (the agent writes it)."""
    return log_dir / f"job-{job_id}.pace"


def simulated_command(assignment: Assignment, *, seed: int, speedup: float, partner_path: Path,
                      throughputs: Path | None = None, checkpoint_interval_s: float = 0.0,
                      pace_path: Path | None = None) -> tuple[str, dict]:
    """(command, extra environment) running the assignment as a simulated job (simjob), which
    reads its partners from `partner_path` and its pace from `pace_path` as it runs and its
    true rates from `throughputs` (Gavel's file; None: simjob's default), and checkpoints every
    `checkpoint_interval_s` seconds (0: never)."""
    argv = [
        sys.executable, "-m", "telemetry.agent.simjob", "--workload", assignment.workload,
        "--gpu-type", assignment.gpu_type, "--num-gpus", str(len(assignment.gpu_indexes)),
        "--steps", str(assignment.total_steps or SIMULATED_DEFAULT_STEPS), "--seed", str(seed),
        "--speedup", str(speedup), "--checkpoint-interval-s", str(checkpoint_interval_s),
    ]
    argv += ["--partner-file", str(partner_path)]
    if pace_path is not None:
        argv += ["--pace-file", str(pace_path)]
    if throughputs is not None:
        argv += ["--throughputs", str(throughputs)]
    return shlex.join(argv), {"PYTHONPATH": str(_SOURCE_ROOT)}
