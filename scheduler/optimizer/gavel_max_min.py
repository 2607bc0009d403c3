"""`gavel_max_min`: Gavel's heterogeneity-aware max-min fairness (LAS over effective
throughput; Narayanan et al., OSDI 2020, section 4.2):

    maximise  min_j  throughput(j, X) / (w_j * throughput(j, X_equal))

over the allocations X of gavel.py: every job's throughput normalised by what 1/n of the
cluster would give it, so a job that runs equally well everywhere does not crowd out one that
needs the fast type. The optimum is often not unique (a job can reach the minimum on several
types); a second LP keeps the minimum and maximises the sum of the normalised throughputs, so
no GPU idles that could speed a job up (the role of Gavel's water-filling).
"""
from collections.abc import Mapping, Sequence

import pulp

from .gavel import (
    Allocation,
    GavelJob,
    allocation_model,
    equal_share_throughput,
    read_allocation,
    runnable,
    solve_lp,
    throughput_expr,
)

#: The second LP may give up this fraction of the first one's minimum (numerical slack).
SLACK = 1e-6


def max_min_allocation(jobs: Sequence[GavelJob], capacity: Mapping[str, int]) -> tuple[Allocation, float]:
    """(X, the max-min value); ({}, 0.0) with no job that can run or no solution."""
    jobs = runnable(jobs)
    if not jobs:
        return {}, 0.0
    scale = {job.id: job.weight * equal_share_throughput(job, capacity, len(jobs)) for job in jobs}
    lp, x = allocation_model("gavel_max_min", jobs, capacity)
    least = pulp.LpVariable("least", 0)
    lp += least
    normalised = {job.id: throughput_expr(job, x) * (1.0 / scale[job.id]) for job in jobs}
    for i, job in enumerate(jobs):
        lp += normalised[job.id] >= least, f"least_{i}"
    if not solve_lp(lp):
        return {}, 0.0
    value = least.value() or 0.0
    lp.setObjective(pulp.lpSum(normalised.values()))
    lp += least >= value * (1 - SLACK), "keep_least"
    if not solve_lp(lp):
        return {}, 0.0
    return read_allocation(x), value
