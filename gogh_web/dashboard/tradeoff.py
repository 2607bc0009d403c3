"""The trade-off between throughput, power and fairness, in plain Python (no Django).

A sweep solves one cluster state under a grid of energy weights x fairness weights, and
summarises each decision as an operating point: total predicted throughput, predicted
power and Jain's fairness index over tenants. The Django shell (services.py) builds the
problem, runs the points as Celery tasks and stores them; this module only computes.
"""
import hashlib
import json
import math
from dataclasses import dataclass, replace

from scheduler.optimizer import JobSpec, Plan, Problem
from scheduler.simulation.metrics import jain

# Effective energy weights of the sweep (the adaptive weight is off at each point, so a point
# is the decision the solver takes at exactly that weight).
ENERGY_WEIGHTS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)
# Fairness weights of the sweep (SolverSettings.fairness_weight, scheduler/optimizer/fairness.py):
# 0 is off; w values one unit of the least-served tenant's share (mean throughput / T_min of its
# jobs) at w average GPUs' full power, so 0.5 and 2 sit below and above one GPU's worth.
FAIRNESS_WEIGHTS = (0.0, 0.5, 2.0)
# With no value on surplus throughput the energy weight has nothing to trade against (every
# weight minimises power alone), so the sweep and the preview value one unit of relative
# surplus over T_min at this many watts unless the operator set throughput_value_w.
DEFAULT_SURPLUS_VALUE_W = 100.0
# Settings the sweep varies or ignores: they do not enter the cluster-state digest.
SWEPT_SETTINGS = ("base_energy_weight", "adaptive_weight", "load_window", "fairness_weight")
# The largest share a job counts with in the fairness index (throughput / T_min).
MAX_SHARE = 1e9


@dataclass(frozen=True)
class SweepSetting:
    index: int
    energy_weight: float
    fairness_weight: float


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
        for index, (fair, weight) in enumerate((f, w) for f in FAIRNESS_WEIGHTS for w in ENERGY_WEIGHTS)
    ]


def surplus_value_w(configured: float) -> float:
    return configured if configured > 0 else DEFAULT_SURPLUS_VALUE_W


def point_problem(problem: Problem, setting: SweepSetting) -> Problem:
    """The problem as solved at one sweep point: fixed energy weight, the point's fairness weight."""
    settings = replace(
        problem.settings, base_energy_weight=setting.energy_weight, adaptive_weight=False,
        fairness_weight=setting.fairness_weight,
    )
    return replace(problem, settings=settings)


def state_digest(problem_dict: dict) -> str:
    """A digest of the cluster state a sweep depends on: jobs, their placements, GPUs and the
    settings the sweep does not vary. The prediction tables are left out: they hold measured
    means and P2 estimates that move with every telemetry measurement, and a sweep that changed
    with each of them would never finish on a busy cluster. The load history is left out too
    (the sweep's points use fixed weights), so a new round alone keeps the cached sweep."""
    settings = {k: v for k, v in problem_dict["settings"].items() if k not in SWEPT_SETTINGS}
    relevant = {**problem_dict, "settings": settings, "load_history": None, "predictions": None}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


def operating_point(jobs: tuple[JobSpec, ...], served: dict[str, tuple[float, float]]) -> OperatingPoint:
    """`served`: job id -> (predicted throughput, predicted power) of each placed job. A tenant's
    share is the mean, over its active jobs, of throughput / T_min (0 for a waiting job), at
    most MAX_SHARE: a T_min near zero (older rows; the API now refuses them) would otherwise make
    the share infinite and Jain's index NaN, and every trade-off request a 500."""
    shares: dict[str, list[float]] = {}
    for job in jobs:
        throughput = served.get(job.id, (0.0, 0.0))[0]
        shares.setdefault(job.tenant, []).append(min(throughput / job.min_throughput, MAX_SHARE))
    return OperatingPoint(
        throughput=sum(t for t, _ in served.values()),
        power_w=sum(p for _, p in served.values()),
        fairness=jain([sum(s) / len(s) for s in shares.values()]),
        placed=len(served),
    )


def same_point_groups(points: list[tuple[float, float, float]]) -> list[int]:
    """For each (throughput, power, Jain) point of a sweep, the number of its operating point:
    0, 1, ... in order of first appearance, one number for points that coincide (to float noise:
    equal decisions sum their jobs in different orders). Settings that give the same decision
    draw one marker, so the page says how many distinct points there are: on a cluster whose
    jobs fit only one way, or whose placed jobs would gain less than the migration cost by
    moving, every setting gives the same decision and 21 points are one (docs/dashboard.md)."""
    firsts: list[tuple[float, float, float]] = []
    groups = []
    for point in points:
        group = next((n for n, first in enumerate(firsts) if _coincide(point, first)), None)
        if group is None:
            group = len(firsts)
            firsts.append(point)
        groups.append(group)
    return groups


def _coincide(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9) for x, y in zip(a, b))


def allocation_point(problem: Problem, allocation: Plan) -> OperatingPoint:
    served = {j: (p.predicted_throughput, p.predicted_power_w) for j, p in allocation.placements.items()}
    return operating_point(problem.jobs, served)


def job_moves(problem: Problem, allocation: Plan) -> list[Move]:
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


# Seconds a sweep may take before the page stops waiting for it: a fixed allowance for the
# queue plus each point's solver time limit (points may run one after another on one worker).
SWEEP_ALLOWANCE_S = 60.0
SOLVING, COMPLETE, FAILED = "solving", "complete", "failed"


def sweep_timeout_s(points_expected: int, time_limit_s: float) -> float:
    return SWEEP_ALLOWANCE_S + points_expected * time_limit_s


def sweep_status(*, expected: int, solved: int, failed: int, age_s: float, timeout_s: float) -> str:
    """complete: every point solved; failed: every point in with some that failed, or the
    timeout passed with points missing (a lost dispatch or task); solving otherwise."""
    if solved >= expected:
        return COMPLETE
    if solved + failed >= expected or age_s > timeout_s:
        return FAILED
    return SOLVING
