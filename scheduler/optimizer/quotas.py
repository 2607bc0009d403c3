"""Tenants' nominal quotas per GPU type, with the whole cluster as one cohort (Kueue's
semantics; docs/optimization.md, "Quotas").

A tenant's quota on a type is its own whenever its jobs can use it: GPUs a job takes within
its tenant's quota are admitted before any GPU taken beyond one (borrowed), whatever the
borrower's priority (Kueue's reclaimWithinCohort: Any), so an owner's job reclaims what
borrowers hold (they are preempted with notice, least work at risk first). A tenant that may
not borrow never holds more than its quota of a type (0 where it has none). The ILP formulates
this (ilp_model.py); this module holds what every solver shares: the quotas by tenant and
type, a decision's use of them, the hard cap of tenants that may not borrow, the pre-pass that
lifts the jobs within quota above every other job for the solvers that do not formulate it,
and the pending reason of a job that waits for quota.
"""
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from .problem import JobSpec, Problem

LIFTED = (
    "Quotas were honoured by a pre-pass, not optimised: jobs that fit their tenant's quota on their "
    "smallest configuration were admitted before all others ({solver})."
)
CELLS_WHOLE = "Quotas are shared by the whole cluster: the cells solver solved it as one ILP."
CAPPED_DROPPED = "{n} job(s) dropped: their tenant may not borrow and the decision exceeded its quota."
NO_BORROW = "Waiting for quota: tenant {tenant} uses {used} of its {quota} {gpu_type} quota and may not borrow."
NO_QUOTA_NO_BORROW = "Waiting for quota: tenant {tenant} has no quota on {types} and may not borrow."
NO_IDLE = (
    "Waiting for quota: tenant {tenant} {holds} and there is no idle quota to borrow (owners use {owned} of "
    "the {total} {gpu_type} GPUs)."
)
HOLDS = "uses {used} of its {quota} {gpu_type} quota"
HOLDS_NONE = "has no {gpu_type} quota"
#: The owner of the cohort's pool in the ILP's quota rows (no tenant's slug: slugs are words).
POOL = " pool"


@dataclass(frozen=True)
class Quotas:
    """nominal[(tenant, type)]: GPUs; capped: the tenants that may not borrow; pool[type]: the
    cohort's own GPUs of the type, those no tenant's quota claims (its GPUs less the sum of
    the quotas on it, none where they add up to more); no pool where no quota claims any of
    the cluster's GPUs (there is nothing to reclaim, so nothing to count within quota)."""

    nominal: dict[tuple[str, str], int]
    capped: frozenset[str]
    pool: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, problem: Problem) -> "Quotas":
        nominal: dict[tuple[str, str], int] = defaultdict(int)
        for quota in problem.quotas:
            nominal[(quota.tenant, quota.gpu_type)] += max(0, quota.gpus)
        claimed: dict[str, int] = defaultdict(int)
        for (_, gpu_type), gpus in nominal.items():
            claimed[gpu_type] += gpus
        present = Counter(g.gpu_type for g in problem.gpus)
        if not any(claimed[gpu_type] for gpu_type in present):
            return cls(dict(nominal), frozenset(problem.no_borrowing))  # no quota claims a GPU: nothing to pool
        pool = {gpu_type: n - claimed[gpu_type] for gpu_type, n in present.items() if n > claimed[gpu_type]}
        return cls(dict(nominal), frozenset(problem.no_borrowing), pool)

    def __bool__(self) -> bool:
        return bool(self.nominal or self.capped)

    def owns(self, tenant: str, gpu_type: str) -> int:
        return self.nominal.get((tenant, gpu_type), 0)

    def pooled(self, tenant: str, gpu_type: str) -> int:
        """The GPUs of the cohort's pool of the type that the tenant's jobs may count as within
        quota (none for a tenant that may not borrow)."""
        return 0 if tenant in self.capped else self.pool.get(gpu_type, 0)

    def cap(self, tenant: str, gpu_type: str) -> int | None:
        """The most GPUs of the type the tenant may hold (None: no limit, it may borrow)."""
        return self.owns(tenant, gpu_type) if tenant in self.capped else None


def binding(problem: Problem) -> bool:
    """Quotas that can change a decision: a tenant that may not borrow, or a quota of some GPUs
    on a type the cluster has."""
    present = {gpu.gpu_type for gpu in problem.gpus}
    return bool(problem.no_borrowing) or any(q.gpus > 0 and q.gpu_type in present for q in problem.quotas)


def quota_key(tenant: str, gpu_type: str) -> str:
    """The capacity key (Instance.free, with block size 0) of a capped tenant's quota of a type."""
    return f"quota:{tenant}:{gpu_type}"


def use_of(inst, choice) -> tuple[str, str, int]:
    """(tenant, GPU type, GPUs) a (non-empty) choice takes: a group's jobs are of one tenant
    (feasibility.one_tenant) and share one GPU."""
    tenant = inst.jobs[inst.jobs_of(choice)[0]].tenant
    if choice[0] == "g":
        return tenant, inst.groups[choice[1]].gpu_type, 1
    opt = inst.all_options[choice[1]]
    return tenant, opt.gpu_type, opt.num_gpus


def held(inst, choices) -> dict[tuple[str, str], int]:
    """GPUs per (tenant, type) a decision holds (a group's GPU counted once)."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for choice in {c for c in choices if c is not None}:
        tenant, gpu_type, n = use_of(inst, choice)
        out[(tenant, gpu_type)] += n
    return out


def enforce_caps(inst, choices: list) -> tuple[list, int]:
    """The decision with the jobs that put a tenant that may not borrow over its quota left out
    (least admission value first), and how many: a safety net under every solver, so that no
    decision breaks the hard cap whatever the solver did."""
    quotas = inst.quotas
    if not quotas.capped:
        return choices, 0
    out, dropped = list(choices), 0
    use = held(inst, out)
    for j in sorted(range(len(out)), key=lambda j: (inst.values[j], inst.jobs[j].id)):
        choice = out[j]
        if choice is None:
            continue
        tenant, gpu_type, n = use_of(inst, choice)
        cap = quotas.cap(tenant, gpu_type)
        if cap is None or use[(tenant, gpu_type)] <= cap:
            continue
        use[(tenant, gpu_type)] -= n
        for x in inst.jobs_of(choice):
            out[x] = None
            dropped += 1
    return out, dropped


def lift_within_quota(problem: Problem, jobs: tuple[JobSpec, ...], min_gpus) -> tuple[JobSpec, ...]:
    """For the solvers that do not formulate quotas: the jobs that fit their tenant's quota
    moved above every other admission level (as admission.probes_last moves probes below), so
    that a greedy fill admits them first and they displace borrowers. Per tenant, its jobs by
    priority (placed ones first, then by id) each count their smallest GPU need on a type of
    their tenant's quota where it still fits; `min_gpus(job, gpu_type)` gives that need (None:
    no configuration of the type meets T_min)."""
    quotas = Quotas.of(problem)
    if not quotas.nominal or not jobs:
        return jobs
    left = dict(quotas.nominal)
    lifted: set[str] = set()
    for job in sorted(jobs, key=lambda job: (-job.priority, job.current is None, job.id)):
        if job.probe:
            continue
        for (tenant, gpu_type), free in sorted(left.items()):
            need = min_gpus(job, gpu_type) if tenant == job.tenant else None
            if need is not None and need <= free:
                left[(tenant, gpu_type)] -= need
                lifted.add(job.id)
                break
    if not lifted:
        return jobs
    shift = max(job.priority for job in jobs) - min(job.priority for job in jobs) + 1
    return tuple(replace(job, priority=job.priority + shift) if job.id in lifted else job for job in jobs)


def quota_reason(inst, j: int, choices: list, needs: dict[str, int]) -> str | None:
    """Why job j waits for quota, where it does (None otherwise). `needs`: the fewest GPUs of
    each type it could run on. A tenant that may not borrow waits for quota where its quota
    left is short of the need on every type; another tenant, where every type lacks the free
    GPUs it needs and owners within their quotas hold some of them."""
    quotas, tenant = inst.quotas, inst.jobs[j].tenant
    if not quotas or not needs:
        return None
    use = held(inst, choices)
    types = sorted(needs, key=lambda t: (needs[t], t))
    if tenant in quotas.capped:
        if any(use.get((tenant, t), 0) + needs[t] <= quotas.owns(tenant, t) for t in types):
            return None
        owned = [t for t in types if quotas.owns(tenant, t) > 0]
        if not owned:
            return NO_QUOTA_NO_BORROW.format(tenant=tenant, types=", ".join(types))
        return NO_BORROW.format(tenant=tenant, used=use.get((tenant, owned[0]), 0), quota=quotas.owns(tenant, owned[0]),
                                gpu_type=owned[0])
    on_type = defaultdict(int)
    for (_, gpu_type), n in use.items():
        on_type[gpu_type] += n
    if any(inst.capacity[t].gpus - on_type[t] >= needs[t] for t in types):
        return None
    gpu_type = types[0]
    owners = sum(min(n, quotas.owns(t, g)) for (t, g), n in use.items() if g == gpu_type and t != tenant)
    if owners == 0:
        return None
    quota = quotas.owns(tenant, gpu_type)
    holds = HOLDS.format(used=use.get((tenant, gpu_type), 0), quota=quota, gpu_type=gpu_type) if quota else (
        HOLDS_NONE.format(gpu_type=gpu_type))
    return NO_IDLE.format(tenant=tenant, holds=holds, gpu_type=gpu_type, owned=owners,
                          total=inst.capacity[gpu_type].gpus)
