"""Tenants in the simulation: the multi-tenant scenario (`simulate --tenants`) and what the
report measures about them (docs/simulation.md, "Tenants").

The scenario: four tenants with shares 4/2/1/1 and nominal quotas per GPU type (QuotaSpec),
one of them (`burst`) without a quota, whose jobs arrive in bursts. Jobs are those of the
default generator, each given a tenant from the seed; a burst tenant's jobs are regrouped so
that BURST_SIZE of them arrive within BURST_SPREAD_S of the first one's arrival.

The ledger follows every tenant through the run: GPU time received and entitled (for
tenant_jain), decayed usage weighted by GPU type (the fair-share factor of
scheduler.optimizer.fair_share, which `gogh` admits by), energy, and GPU-seconds denied below
a quota while others borrowed (quota_violations).
"""
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from scheduler.optimizer.entitlement import water_fill
from scheduler.optimizer.fair_share import decayed, factors, gpu_hour_weight
from scheduler.optimizer.problem import GpuTypeSpec, QuotaSpec

from .jobs import SimJob

DEFAULT_TENANT = "default"
#: Fair-share usage halves every week by default (SolverConfig.fair_share_half_life_h).
DEFAULT_HALF_LIFE_H = 168.0
BURST_SIZE = 8
BURST_SPREAD_S = 300.0


@dataclass(frozen=True)
class TenantSpec:
    slug: str
    shares: int
    share_of_jobs: float  # the fraction of the generated jobs that are its own
    bursty: bool = False


MULTI_TENANT = (
    TenantSpec("vision", 4, 0.35),
    TenantSpec("nlp", 2, 0.25),
    TenantSpec("recsys", 1, 0.15),
    TenantSpec("burst", 1, 0.25, bursty=True),
)
#: Nominal quotas (GPUs of each type, of 36 per type): `burst` has none, it only borrows.
MULTI_TENANT_QUOTAS = (
    QuotaSpec("vision", "v100", 16), QuotaSpec("vision", "p100", 8),
    QuotaSpec("nlp", "v100", 8), QuotaSpec("nlp", "p100", 8), QuotaSpec("nlp", "k80", 8),
    QuotaSpec("recsys", "k80", 12), QuotaSpec("recsys", "p100", 4),
)


def with_tenants(jobs: Iterable[SimJob], seed: int, tenants=MULTI_TENANT) -> tuple[SimJob, ...]:
    """Each job given a tenant (drawn in job order by the tenants' share of jobs); a bursty
    tenant's jobs, in order, arrive in groups of BURST_SIZE: each at its group's first
    arrival plus U(0, BURST_SPREAD_S)."""
    rng = random.Random(f"tenants:{seed}")
    weights = [t.share_of_jobs for t in tenants]
    out, group_start = [], {}
    counts: dict[str, int] = defaultdict(int)
    for job in jobs:
        tenant = rng.choices(tenants, weights)[0]
        arrival = job.arrival_s
        if tenant.bursty:
            if counts[tenant.slug] % BURST_SIZE == 0:
                group_start[tenant.slug] = arrival
            arrival = round(group_start[tenant.slug] + rng.uniform(0.0, BURST_SPREAD_S), 3)
            counts[tenant.slug] += 1
        out.append(replace(job, tenant=tenant.slug, arrival_s=arrival))
    return tuple(out)


def type_weights(gpu_types: Mapping[str, GpuTypeSpec]) -> dict[str, float]:
    """GPU type -> what one of its GPU-hours counts in fair-share usage (the control plane's
    accounting's weight)."""
    return {name: gpu_hour_weight(spec.tdp_w) for name, spec in gpu_types.items()}


@dataclass(frozen=True)
class Holding:
    """One active job in a stretch of time: its tenant, GPUs asked (D_j), the type and GPUs
    it holds (a shared GPU split; None/0: pending), the types it could run on, its power."""

    tenant: str
    asks: int
    gpu_type: str | None
    gpus: float
    runs_on: frozenset[str]
    power_w: float = 0.0


class TenantLedger:
    def __init__(self, shares: Mapping[str, float], quotas: Iterable[QuotaSpec], weights: Mapping[str, float],
                 half_life_s: float):
        self.shares, self.quotas = dict(shares), tuple(quotas)
        self.weights, self.half_life_s = dict(weights), half_life_s
        self.quota = {(q.tenant, q.gpu_type): q.gpus for q in self.quotas}
        self.received: dict[str, float] = defaultdict(float)
        self.entitled: dict[str, float] = defaultdict(float)
        self.usage: dict[str, float] = defaultdict(float)
        self.energy_j: dict[str, float] = defaultdict(float)
        self.denied_gpu_s = 0.0

    def factors(self) -> dict[str, float]:
        """Every tenant's fair-share factor now."""
        return factors(dict(self.usage), self.shares)

    def record(self, dt: float, holdings: list[Holding], gpus: int) -> None:
        """A stretch of `dt` seconds in which the jobs held `holdings` on a cluster of `gpus` GPUs."""
        if dt <= 0:
            return
        held: dict[tuple[str, str], float] = defaultdict(float)
        demand: dict[str, float] = defaultdict(float)
        for h in holdings:
            demand[h.tenant] += h.asks
            self.energy_j[h.tenant] += h.power_w * dt
            if h.gpu_type is not None:
                held[h.tenant, h.gpu_type] += h.gpus
        for tenant in list(self.usage):
            self.usage[tenant] = decayed(self.usage[tenant], dt, self.half_life_s)
        for (tenant, gpu_type), n in held.items():
            self.received[tenant] += n * dt
            self.usage[tenant] += n * self.weights.get(gpu_type, 1.0) * dt / 3600.0
        fair = water_fill(min(gpus, sum(demand.values())), demand, {t: self.shares.get(t, 1) for t in demand})
        for tenant, share in fair.items():
            self.entitled[tenant] += share * dt
        self.denied_gpu_s += dt * self.denied(holdings, held)

    def denied(self, holdings: list[Holding], held: Mapping[tuple[str, str], float]) -> float:
        """GPUs denied below quota now: per tenant and type with a quota, the least of the
        quota it does not hold, its waiting jobs' GPUs that could run there, and the GPUs of
        the type others hold beyond their own quotas (borrowed)."""
        total = 0.0
        for q in self.quotas:
            waiting = sum(h.asks for h in holdings
                          if h.tenant == q.tenant and h.gpu_type is None and q.gpu_type in h.runs_on)
            borrowed = sum(max(0.0, n - self.quota.get((tenant, gpu_type), 0))
                           for (tenant, gpu_type), n in held.items() if gpu_type == q.gpu_type and tenant != q.tenant)
            total += max(0.0, min(q.gpus - held.get((q.tenant, q.gpu_type), 0.0), waiting, borrowed))
        return total

    def ratios(self) -> dict[str, float]:
        """Tenant -> GPU time received over the GPU time it was entitled to."""
        return {t: self.received.get(t, 0.0) / e for t, e in self.entitled.items() if e > 0}
