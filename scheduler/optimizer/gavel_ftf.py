"""`gavel_ftf`: finish-time fairness (Themis' rho in Gavel's formulation; Narayanan et al.,
OSDI 2020, section 4.2):

    minimise  max_j rho_j(X),   rho_j(X) = (elapsed_j + remaining_j / throughput(j, X)) / isolated_j

where isolated_j = total_steps_j / throughput(j, X_equal) is the job's completion time with
1/n of the cluster throughout. rho_j <= R is linear in X for a fixed R:
throughput(j, X) >= needed_j(R) = remaining_j / (R * isolated_j - elapsed_j) (impossible while
R * isolated_j <= elapsed_j), so the least feasible R is found by bisection, each step an LP
that maximises min_j throughput(j, X) / needed_j(R) (feasible when that is >= 1); every LP's X
also bounds R from above by the rho it achieves. A last LP at the found R maximises the jobs'
total throughput over what they need, so no GPU idles that could speed a job up.
"""
from collections.abc import Mapping, Sequence

import pulp

from .gavel import (
    Allocation,
    GavelJob,
    allocation_model,
    effective_throughput,
    equal_share_throughput,
    read_allocation,
    runnable,
    solve_lp,
    throughput_expr,
)

#: Bisection stops when the bracket of rho is this narrow, relatively.
TOLERANCE = 0.005
MAX_STEPS = 40
#: The last LP may give up this fraction of what each job needs (numerical slack).
SLACK = 1e-6


def isolated_s(job: GavelJob, capacity: Mapping[str, int], n: int) -> float:
    """The job's completion time with 1/n of the cluster, all its steps."""
    return job.total_steps / equal_share_throughput(job, capacity, n)


def rho(job: GavelJob, row: Mapping[str, float], isolated: float) -> float:
    """Its finish-time fairness under an allocation row (inf: the row gives it nothing)."""
    rate = effective_throughput(job, row)
    if job.remaining_steps <= 0:
        return job.elapsed_s / isolated
    return (job.elapsed_s + job.remaining_steps / rate) / isolated if rate > 0 else float("inf")


def _needed(job: GavelJob, bound: float, isolated: float) -> float | None:
    """Throughput the job needs for rho <= bound; None: no throughput is enough."""
    room = bound * isolated - job.elapsed_s
    if job.remaining_steps <= 0:
        return 0.0
    return job.remaining_steps / room if room > 0 else None


def _best_ratio(jobs, capacity, needed: dict[str, float], *, total: bool = False):
    """max min_j throughput_j / needed_j (or, with `total`, the sum at min >= 1 - SLACK) ->
    (value, allocation), (0, {}) when infeasible."""
    lp, x = allocation_model("gavel_ftf", jobs, capacity)
    ratios = [throughput_expr(job, x) * (1.0 / needed[job.id]) for job in jobs if needed[job.id] > 0]
    if total:
        lp += pulp.lpSum(ratios)
        for i, ratio in enumerate(ratios):
            lp += ratio >= 1 - SLACK, f"needed_{i}"
    else:
        least = pulp.LpVariable("least", 0)
        lp += least
        for i, ratio in enumerate(ratios):
            lp += ratio >= least, f"least_{i}"
    if not ratios or not solve_lp(lp):
        return 0.0, {}
    return (1.0 if total else least.value() or 0.0), read_allocation(x)


def _worst(jobs, allocation: Allocation, iso: dict[str, float]) -> float:
    return max(rho(job, allocation.get(job.id, {}), iso[job.id]) for job in jobs)


def ftf_allocation(jobs: Sequence[GavelJob], capacity: Mapping[str, int]) -> tuple[Allocation, float]:
    """(X, the least max rho found); ({}, 0.0) with no job that can run."""
    jobs = [job for job in runnable(jobs) if job.total_steps > 0]
    if not jobs:
        return {}, 0.0
    iso = {job.id: isolated_s(job, capacity, len(jobs)) for job in jobs}
    _, best = _best_ratio(jobs, capacity, {job.id: job.remaining_steps / iso[job.id] for job in jobs})
    low, high = max(job.elapsed_s / iso[job.id] for job in jobs), _worst(jobs, best, iso)
    for _ in range(MAX_STEPS):
        if high <= low * (1 + TOLERANCE) or high == float("inf"):
            break
        middle = (low + high) / 2
        needed = {job.id: _needed(job, middle, iso[job.id]) for job in jobs}
        value, allocation = (0.0, {}) if None in needed.values() else _best_ratio(jobs, capacity, needed)
        if allocation and _worst(jobs, allocation, iso) < high:
            best, high = allocation, _worst(jobs, allocation, iso)
        if value < 1:
            low = middle
    needed = {job.id: _needed(job, high, iso[job.id]) for job in jobs}
    if None not in needed.values():
        _, spread = _best_ratio(jobs, capacity, needed, total=True)
        if spread and _worst(jobs, spread, iso) <= high * (1 + TOLERANCE):
            best = spread
    return best, high
