"""How simulated jobs follow the job contract: how often each checkpoints, what a restart of
each workload costs (docs/simulation.md, "Checkpoints and restarts").

Both are drawn from the scenario seed, each with its own random stream, so a scenario's jobs
(arrivals, workloads, sizes, T_min) are the same draws as without them and runs before and
after the contract compare the same arrivals.
"""
import random
from collections.abc import Iterable
from dataclasses import replace

from .jobs import SimJob

#: Share of jobs that never checkpoint: an interruption loses all their progress.
NEVER_CHECKPOINTS = 0.2
#: The others checkpoint every U(5, 30) minutes of training.
CHECKPOINT_INTERVAL_S = (300.0, 1800.0)
#: A restart (start, load the checkpoint, warm up) costs each workload U(20, 120) s.
RESTART_OVERHEAD_S = (20.0, 120.0)
#: What the control plane assumes before it has measured a restart of a workload: the catalog's
#: default (catalog.models.Workload.restart_overhead_s).
DEFAULT_RESTART_OVERHEAD_S = 30.0


def draw_checkpoint_interval(rng: random.Random) -> float | None:
    """Seconds of training between a job's checkpoints; None: it never checkpoints."""
    if rng.random() < NEVER_CHECKPOINTS:
        return None
    return rng.uniform(*CHECKPOINT_INTERVAL_S)


def with_checkpoints(jobs: Iterable[SimJob], seed: int) -> tuple[SimJob, ...]:
    """The jobs, each with its checkpoint interval drawn in job order."""
    rng = random.Random(f"checkpoints:{seed}")
    return tuple(replace(job, checkpoint_interval_s=draw_checkpoint_interval(rng)) for job in jobs)


def restart_overheads(workloads: Iterable[str], seed: int) -> dict[str, float]:
    """workload -> seconds a restart of it costs, drawn in name order."""
    rng = random.Random(f"restart-overhead:{seed}")
    return {workload: rng.uniform(*RESTART_OVERHEAD_S) for workload in sorted(set(workloads))}
