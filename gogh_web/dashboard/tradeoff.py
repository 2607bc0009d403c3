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
from scheduler.optimizer.group_estimates import GroupEstimates
from scheduler.optimizer.instance import power_per_gpu_alone
from scheduler.optimizer.limit_levels import group_power_at
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


# What happens to a job in a preview: "place" (pending -> placed), "move" (other GPUs), "share"
# (same GPUs, other jobs sharing them), "preempt" (back to pending), "figures" (same GPUs and
# partners, other predicted figures: never expected, as both sides use one set of predictions,
# but listed if a solver reports it so that the list always accounts for the totals).
PLACE, MOVE, SHARE, PREEMPT, FIGURES = "place", "move", "share", "preempt", "figures"


@dataclass(frozen=True)
class Move:
    job_id: str
    kind: str  # PLACE, MOVE, SHARE, PREEMPT or FIGURES
    from_gpus: tuple[str, ...]
    to_gpus: tuple[str, ...]
    from_partners: tuple[str, ...] = ()
    to_partners: tuple[str, ...] = ()
    from_type: str = ""  # GPU type, "" when none (pending, or its GPUs are no longer schedulable)
    to_type: str = ""
    from_served: tuple[float, float] = (0.0, 0.0)  # (predicted steps/s, W) where it runs now
    to_served: tuple[float, float] = (0.0, 0.0)  # and where the decision puts it


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
    return operating_point(problem.jobs, plan_served(allocation))


def plan_served(allocation: Plan) -> dict[str, tuple[float, float]]:
    return {j: (p.predicted_throughput, p.predicted_power_w) for j, p in allocation.placements.items()}


def current_point(problem: Problem) -> OperatingPoint:
    """Where the cluster runs now, by the problem's own predictions: the point a solve of the
    same problem is compared with (a preview, the sweep's points)."""
    return operating_point(problem.jobs, current_served(problem))


def current_served(problem: Problem) -> dict[str, tuple[float, float]]:
    """Job id -> (throughput, power) predicted for each job where it runs now, by the problem's
    predictions and the rules a solver prices a kept job by (alone: tau of its configuration and
    the per-GPU power; sharing: the group's estimate, its power split evenly). Not the figures
    stored with its allocation: those are the predictions of the round that placed it, and a
    preview comparing them with a solve under today's predictions showed changes no move
    explained. At the power limit its GPUs run at now, as the solver prices a limit (a job kept
    at its limit then shows no change). A job whose GPUs left the problem (unhealthy, node down)
    is not served here."""
    gpu_by_id, gpus_of = {g.id: g for g in problem.gpus}, current_gpus(problem)
    estimates = GroupEstimates(problem, sorted({j.workload for j in problem.jobs}), sorted(problem.gpu_types))
    workload_of = {j.id: j.workload for j in problem.jobs}
    served = {}
    for job in problem.jobs:
        gpu_type = current_type(problem, job, gpu_by_id)
        if gpu_type is None:
            continue
        k, partners = len(job.current.gpu_ids), current_partners(job, gpus_of)
        limit = _fractions_at(problem, (job.workload, *(workload_of[p] for p in partners)), gpu_type,
                              job.current.power_limit_w)
        if partners and k == 1:
            found = estimates.estimate((job.workload, *(workload_of[p] for p in partners)), gpu_type)
            if not found:
                served[job.id] = (0.0, 0.0)
                continue
            tau, power = found[0][0], found[1]
            if limit:
                tau, power = tau * limit[0][0], group_power_at(power, limit[1], job.current.power_limit_w)
            served[job.id] = (tau, power / (1 + len(partners)))
            continue
        consolidated = len({gpu_by_id[g].node for g in job.current.gpu_ids}) == 1
        tau = problem.predictions.tau(job.workload, gpu_type, k, consolidated) or 0.0
        power = k * power_per_gpu_alone(problem, job.workload, gpu_type)
        if limit:
            tau, power = tau * limit[0][0], min(power * limit[1][0], k * job.current.power_limit_w)
        served[job.id] = (tau, power)
    return served


def _fractions_at(problem: Problem, workloads: tuple[str, ...], gpu_type: str,
                  limit_w: float | None) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """Each member's (speed fractions, power fractions) at the limit its GPU runs at now, as the
    options a solver chooses from price it (limit_levels.py); None at the default, or where the
    predictions do not know that limit for every member (priced at the default then)."""
    at_limit = getattr(problem.predictions, "at_power_limit", None)
    if limit_w is None or at_limit is None:
        return None
    found = [at_limit(w, gpu_type, limit_w) for w in workloads]
    if any(f is None or f[0] <= 0 or f[1] <= 0 for f in found):
        return None
    return tuple(f[0] for f in found), tuple(f[1] for f in found)


def current_type(problem: Problem, job: JobSpec, gpu_by_id: dict) -> str | None:
    """The GPU type a job runs on now; None when it waits, or when its GPUs are not all in the
    problem any more (or not of one type)."""
    if job.current is None or not job.current.gpu_ids:
        return None
    gpus = [gpu_by_id.get(g) for g in job.current.gpu_ids]
    if any(g is None for g in gpus) or len({g.gpu_type for g in gpus}) != 1:
        return None
    return gpus[0].gpu_type


def current_gpus(problem: Problem) -> dict[str, tuple[str, ...]]:
    return {j.id: j.current.gpu_ids for j in problem.jobs if j.current is not None}


def current_partners(job: JobSpec, gpus_of: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The jobs sharing a job's GPU now (`gpus_of`: current_gpus): its recorded partners still in
    the problem on the same GPUs (a partner that ended is still named by the survivor's rows
    until a round rewrites them; the optimiser ignores it too)."""
    if job.current is None:
        return ()
    return tuple(sorted(p for p in job.current.partners if gpus_of.get(p) == job.current.gpu_ids))


def job_moves(problem: Problem, allocation: Plan) -> list[Move]:
    """What applying the allocation would change, job by job, with each job's predicted figures
    before and after (unchanged jobs are left out). Both sides use the problem's predictions,
    so the changes listed account for every difference between current_point and
    allocation_point: a job that keeps its GPUs and partners keeps its figures."""
    gpu_by_id, gpus_of = {g.id: g for g in problem.gpus}, current_gpus(problem)
    now = current_served(problem)
    moves = []
    for job in problem.jobs:
        before = tuple(sorted(job.current.gpu_ids)) if job.current else ()
        placement = allocation.placements.get(job.id)
        after = tuple(sorted(placement.gpu_ids)) if placement else ()
        with_before = current_partners(job, gpus_of)
        with_after = tuple(sorted(placement.partners)) if placement else ()
        served_before = now.get(job.id, (0.0, 0.0))
        served_after = (placement.predicted_throughput, placement.predicted_power_w) if placement else (0.0, 0.0)
        kind = (
            PLACE if not before and after else PREEMPT if before and not after else MOVE if before != after
            else SHARE if with_before != with_after else FIGURES if not _coincide(served_before, served_after)
            else None
        )
        if kind is None:
            continue
        moves.append(Move(
            job.id, kind, before, after, with_before, with_after,
            current_type(problem, job, gpu_by_id) or "", placement.gpu_type if placement else "",
            served_before, served_after,
        ))
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
