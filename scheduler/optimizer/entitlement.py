"""Each tenant's entitlement to the cluster's GPUs now, and the jobs of tenants holding less.

tenant_jain (docs/tenants.md) compares the GPU time a tenant received with its **entitlement**:
the cluster's GPUs split among the tenants with jobs by shares, none above its demand (the GPUs
its jobs ask, D_j), what one cannot use shared by the others (weighted max-min, `water_fill`).
`gogh` runs jobs near T_min on the cheapest GPUs, so with nobody waiting a tenant can still hold
far less than its entitlement: its jobs run on fewer GPUs than they ask, on slower types. The
fair-share factor cannot see it (it compares a tenant's usage with its share of everyone's
usage, not with what it could have had).

`behind_entitlement` gives the training jobs of a tenant holding less than its entitlement a
pace at their fastest predicted rate within D_j (finish_time.best_rate), worth PACE_VALUE_W per
GPU they ask (`behind_share`, feasibility.pace_worth): in the power phase, with the capacity and
power the admitted jobs' T_min leave, they get their D_j GPUs and faster types first. Like the
pace it is a value, not a constraint: admission, every admitted job's T_min and the owners'
quotas come first. With one tenant there is nothing to compare (the caller's gate,
finish_time.shared_by_tenants). The control plane (problem_source) and the simulator call it
alike.
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


def tenants_behind(jobs: tuple[JobSpec, ...], gpus: int, shares: Mapping[str, float]) -> frozenset[str]:
    """Tenants whose training jobs hold fewer GPUs than the tenant's water-filled entitlement of
    `gpus` (a tenant without shares counts one)."""
    held: dict[str, float] = defaultdict(float)
    demand: dict[str, float] = defaultdict(float)
    for job in jobs:
        if job.service or job.probe:
            continue
        demand[job.tenant] += job.max_gpus
        held[job.tenant] += held_gpus(job)
    fair = water_fill(min(gpus, sum(demand.values())), demand, {t: shares.get(t, 1) for t in demand})
    return frozenset(t for t, entitled in fair.items() if held[t] < entitled - 1e-9)


def behind_entitlement(jobs: tuple[JobSpec, ...], gpus: int, shares: Mapping[str, float],
                       predictions: Predictions, gpu_types) -> tuple[JobSpec, ...]:
    """The jobs with the training jobs of tenants behind their entitlement (`tenants_behind`)
    marked `behind_share`, their pace raised to their fastest predicted rate within D_j on
    `gpu_types` (see the module's text); the other jobs as they are."""
    behind = tenants_behind(jobs, gpus, shares)
    out = []
    for job in jobs:
        if job.tenant not in behind or job.service or job.probe:
            out.append(job)
            continue
        best = best_rate(predictions, job.workload, job.max_gpus, gpu_types)
        out.append(replace(job, behind_share=True, pace=max(job.pace, best if best > job.min_throughput else 0.0)))
    return tuple(out)
