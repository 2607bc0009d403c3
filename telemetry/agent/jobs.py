"""What the control plane asks this node to run, and the command that runs it.

An assignment is one job's open allocations on this node (GET /api/nodes/{id}/assignments/).
Its key is the job and its allocation ids: when the key changes (migrated to other GPUs,
preempted and placed again), the running process is stopped and a new one started.
"""
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

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
    partner: str | None
    command: str
    environment: dict
    total_steps: int | None

    @classmethod
    def from_api(cls, item: dict) -> "Assignment":
        return cls(
            job_id=item["job"],
            allocation_ids=tuple(sorted(item["allocations"])),
            gpu_indexes=tuple(sorted(item["gpu_indexes"])),
            gpu_type=item["gpu_type"],
            workload=item["workload"],
            partner=item.get("partner"),
            command=item.get("command") or "",
            environment=dict(item.get("environment") or {}),
            total_steps=item.get("total_steps"),
        )

    @property
    def key(self) -> tuple:
        return self.job_id, self.allocation_ids


def simulated_command(assignment: Assignment, *, seed: int, speedup: float) -> tuple[str, dict]:
    """(command, extra environment) running the assignment as a simulated job (simjob)."""
    argv = [
        sys.executable, "-m", "telemetry.agent.simjob", "--workload", assignment.workload,
        "--gpu-type", assignment.gpu_type, "--num-gpus", str(len(assignment.gpu_indexes)),
        "--steps", str(assignment.total_steps or SIMULATED_DEFAULT_STEPS), "--seed", str(seed),
        "--speedup", str(speedup),
    ]
    if assignment.partner:
        argv += ["--partner", assignment.partner]
    return shlex.join(argv), {"PYTHONPATH": str(_SOURCE_ROOT)}
