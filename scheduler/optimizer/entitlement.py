"""Each tenant's entitlement to the cluster's GPUs now, and the jobs of tenants holding less.

tenant_jain (docs/tenants.md) compares the GPU time a tenant received with its **entitlement**:
the cluster's GPUs split among the tenants with jobs by shares, none above its demand (the GPUs
its jobs ask, D_j), what one cannot use shared by the others (weighted max-min, `water_fill`).
`gogh` runs jobs near T_min on the cheapest GPUs, so with nobody waiting a tenant can still hold
far less than its entitlement: its jobs run on fewer GPUs than they ask, on slower types. The
fair-share factor cannot see it (it compares a tenant's usage with its share of everyone's
usage, not with what it could have had).

`behind_entitlement` gives the multi-GPU training jobs of a tenant holding less than its
entitlement a pace at their fastest predicted rate within D_j (finish_time.best_rate), worth
PACE_VALUE_W times their D_j times the tenant's shortfall (the part of its entitlement it does
not hold; a job whose own finish-time pace is worth more keeps it): in the power phase, with
the capacity and power the admitted jobs' T_min leave, they get their D_j GPUs and faster types
first, the more so the further their tenant is below its entitlement. A single-GPU job holds
its D_j once admitted: a faster type would add nothing to its tenant's GPU time, only crowd the
fast GPUs. Scaled by the shortfall, a tenant near its entitlement stops crowding the fast GPUs
that other tenants' jobs behind their own pace need (docs/tenants.md measures both). Like the
pace it is a value, not a constraint: admission, every admitted job's T_min and the owners'
quotas come first. With one tenant there is nothing to compare (the caller's gate,
finish_time.shared_by_tenants), nor while only one tenant has training jobs (`shortfalls`). The
control plane (problem_source) and the simulator call it alike.
"""
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from .finish_time import best_rate
from .problem import JobSpec, Predictions


def water_fill(capacity: float, demand: Mapping[str, float], shares: Mapping[str, float]) -> dict[str, float]:
    """Weighted max-min split of `capacity` among tenants with demand: by shares, none above
    its demand, what one cannot use shared by the others."""
    out = dict.fromkeys(demand, 0.0)
    left = {tenant for tenant, d in demand.items() if d > 0}
    while left and capacity > 1e-12:
        total = sum(shares[t] for t in left)
        sated = [t for t in left if demand[t] <= capacity * shares[t] / total]
        if not sated:
            for t in left:
                out[t] = capacity * shares[t] / total
            break
        for t in sated:
            out[t] = demand[t]
            capacity -= demand[t]
            left.discard(t)
    return out


def held_gpus(job: JobSpec) -> float:
    """GPUs a job holds now (a GPU shared with partners split among them; 0 while it waits)."""
    if job.current is None:
        return 0.0
    return len(job.current.gpu_ids) / (1 + len(job.current.partners))


def shortfalls(jobs: tuple[JobSpec, ...], gpus: int, shares: Mapping[str, float]) -> dict[str, float]:
    """Tenant -> the part of its water-filled entitlement of `gpus` its training jobs do not hold
    (0..1), for the tenants holding less than it (a tenant without shares counts one); none while
    fewer than two tenants have training jobs: with no other tenant to be fair to, T_min is the
    whole promise and energy decides (a tenant with no jobs is no one to compare with)."""
    held: dict[str, float] = defaultdict(float)
    demand: dict[str, float] = defaultdict(float)
    for job in jobs:
        if job.service or job.probe:
            continue
        demand[job.tenant] += job.max_gpus
        held[job.tenant] += held_gpus(job)
    if len(demand) < 2:
        return {}
    fair = water_fill(min(gpus, sum(demand.values())), demand, {t: shares.get(t, 1) for t in demand})
    return {t: 1.0 - held[t] / entitled for t, entitled in fair.items() if held[t] < entitled - 1e-9}


def behind_entitlement(jobs: tuple[JobSpec, ...], gpus: int, shares: Mapping[str, float],
                       predictions: Predictions, gpu_types) -> tuple[JobSpec, ...]:
    """The jobs with the multi-GPU training jobs of tenants below their entitlement (`shortfalls`) given
    their fastest predicted rate within D_j on `gpu_types` as pace and D_j x the shortfall as
    pace_weight, except a job whose own pace is worth more (a weight of 1 or less: its pace
    stands); the other jobs as they are."""
    short = shortfalls(jobs, gpus, shares)
    out = []
    for job in jobs:
        if job.tenant not in short or job.max_gpus < 2 or job.service or job.probe:
            out.append(job)
            continue
        best = best_rate(predictions, job.workload, job.max_gpus, gpu_types)
        weight = job.max_gpus * short[job.tenant]
        keep = best <= job.min_throughput or (job.pace > 0 and weight <= 1)  # nothing to gain; its own pace
        out.append(job if keep else replace(job, pace=best, pace_weight=weight))
    return tuple(out)
