"""The trade-off between throughput, power and fairness, in plain Python (no Django).

A sweep solves one cluster state under a grid of energy weights, with fairness off and on,
and summarises each decision as an operating point: total predicted throughput, predicted
power and Jain's fairness index over tenants. The Django shell (services.py) builds the
problem, runs the points as Celery tasks and stores them; this module only computes.
"""
import hashlib
import json
from dataclasses import asdict, dataclass, replace

from scheduler.optimizer import Allocation, JobSpec, Problem

# Effective energy weights of the sweep (the adaptive weight is off at each point, so a point
# is the decision the solver takes at exactly that weight).
ENERGY_WEIGHTS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)
FAIRNESS = (False, True)
# With no value on surplus throughput the energy weight has nothing to trade against (every
# weight minimises power alone), so the sweep and the preview value one unit of relative
# surplus over T_min at this many watts unless the operator set throughput_value_w.
DEFAULT_SURPLUS_VALUE_W = 100.0
# Settings the sweep varies or ignores: they do not enter the cluster-state digest.
SWEPT_SETTINGS = ("base_energy_weight", "adaptive_weight", "load_window", "fairness")


@dataclass(frozen=True)
class SweepSetting:
    index: int
    energy_weight: float
    fairness: bool


@dataclass(frozen=True)
class OperatingPoint:
    throughput: float  # steps/s summed over placed jobs (predicted)
    power_w: float  # predicted power of the GPUs that host work
    fairness: float  # Jain's index over tenants of their mean normalised throughput
    placed: int


@dataclass(frozen=True)
class Move:
    job_id: str
    kind: str  # "place" (pending -> placed), "move" (other GPUs), "preempt" (back to pending)
    from_gpus: tuple[str, ...]
    to_gpus: tuple[str, ...]


def sweep_grid() -> list[SweepSetting]:
    return [
        SweepSetting(index, weight, fair)
        for index, (fair, weight) in enumerate((f, w) for f in FAIRNESS for w in ENERGY_WEIGHTS)
    ]


def surplus_value_w(configured: float) -> float:
    return configured if configured > 0 else DEFAULT_SURPLUS_VALUE_W


def point_problem(problem: Problem, setting: SweepSetting) -> Problem:
    """The problem as solved at one sweep point: fixed weight, the point's fairness."""
    settings = replace(
        problem.settings, base_energy_weight=setting.energy_weight, adaptive_weight=False, fairness=setting.fairness
    )
    return replace(problem, settings=settings)


def state_digest(problem_dict: dict) -> str:
    """A digest of the cluster state a sweep depends on: jobs, GPUs, placements, predictions and
    the settings the sweep does not vary. The load history is left out (the sweep's points use
    fixed weights), so a new scheduling round alone does not invalidate a cached sweep."""
    settings = {k: v for k, v in problem_dict["settings"].items() if k not in SWEPT_SETTINGS}
    relevant = {**problem_dict, "settings": settings, "load_history": None}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


def jain(values: list[float]) -> float:
    """Jain's index (sum x)^2 / (n sum x^2), 1 = all equal. With no tenant, or nobody served,
    every tenant is treated alike: 1."""
    square_sum = sum(v * v for v in values)
    if not values or square_sum <= 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * square_sum)


def operating_point(jobs: tuple[JobSpec, ...], served: dict[str, tuple[float, float]]) -> OperatingPoint:
    """`served`: job id -> (predicted throughput, predicted power) of each placed job. A tenant's
    share is the mean, over its active jobs, of throughput / T_min (0 for a waiting job)."""
    shares: dict[str, list[float]] = {}
    for job in jobs:
        throughput = served.get(job.id, (0.0, 0.0))[0]
        shares.setdefault(job.tenant, []).append(throughput / job.min_throughput)
    return OperatingPoint(
        throughput=sum(t for t, _ in served.values()),
        power_w=sum(p for _, p in served.values()),
        fairness=jain([sum(s) / len(s) for s in shares.values()]),
        placed=len(served),
    )


def allocation_point(problem: Problem, allocation: Allocation) -> OperatingPoint:
    served = {j: (p.predicted_throughput, p.predicted_power_w) for j, p in allocation.placements.items()}
    return operating_point(problem.jobs, served)


def job_moves(problem: Problem, allocation: Allocation) -> list[Move]:
    """What applying the allocation would change, job by job (unchanged jobs are left out)."""
    moves = []
    for job in problem.jobs:
        before = tuple(sorted(job.current.gpu_ids)) if job.current else ()
        placement = allocation.placements.get(job.id)
        after = tuple(sorted(placement.gpu_ids)) if placement else ()
        if before == after:
            continue
        kind = "place" if not before else "preempt" if not after else "move"
        moves.append(Move(job.id, kind, before, after))
    return moves


def point_dict(point: OperatingPoint) -> dict:
    return asdict(point)
