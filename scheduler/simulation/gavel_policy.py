"""Gavel's policies in the simulator (scheduler.optimizer.gavel): each round the round
mechanism turns the policy's allocation X into whole-GPU placements.

Gavel is given the strongest footing: X is computed from the simulator's true throughputs
(as the oracle's), each job on exactly its D_j GPUs (in one server where they fit). X is
recomputed when the set of jobs or of GPUs changes, as Gavel does; between changes the
mechanism rotates jobs round by round towards X. A job given the type it already runs on keeps
its GPUs (no restart). With tenants, `gavel_max_min` weighs each job by its tenant's shares
split among the tenant's jobs in the system (the role of Gavel's hierarchical policies,
section 4.3); `gavel_ftf` treats every job alike, as Themis does. Quotas mean nothing to Gavel.
"""
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import replace

from scheduler.optimizer.gavel import GavelJob, RoundMechanism, equal_share_throughput
from scheduler.optimizer.gavel_ftf import ftf_allocation
from scheduler.optimizer.gavel_max_min import max_min_allocation
from scheduler.optimizer.problem import GpuSpec, Placement

from .jobs import SimJob
from .truth import Truth
from .work import JobState

GAVEL_POLICIES = {"gavel_max_min": max_min_allocation, "gavel_ftf": ftf_allocation}


def gavel_job(truth: Truth, job: SimJob, gpu_types, per_server: int, **facts) -> GavelJob:
    """The job as Gavel sees it: on each type, the GPUs (of 1, 2, 4, 8 up to D_j, in one server
    where they fit) that give it the highest true throughput, the fewest among equals."""
    gpus, rates = {}, {}
    for g in gpu_types:
        rate, k = max((truth.throughput(job.workload, g, k, k <= per_server), -k)
                      for k in (1, 2, 4, 8) if k <= job.max_gpus)
        gpus[g], rates[g] = -k, rate
    return GavelJob(job.id, gpus, rates, **facts)


def finish_time_fairness(state: JobState, truth: Truth, gpus: tuple[GpuSpec, ...]) -> float | None:
    """A completed job's rho: its JCT over its JCT with 1/n of the cluster (X_equal, on its D_j
    GPUs, true throughputs), n the jobs in the system on average over its time there (itself
    included); None when it runs nowhere."""
    per_server = max(Counter(g.node for g in gpus).values(), default=1)
    capacity = Counter(g.gpu_type for g in gpus)
    job = state.job
    n = state.system_jobs_s / state.active_s if state.active_s > 0 else 1.0
    rate = equal_share_throughput(gavel_job(truth, job, capacity, per_server), capacity, n)
    if rate <= 0 or state.done_at is None:
        return None
    return (state.done_at - job.arrival_s) / (job.total_steps / rate)


class GavelScheduler:
    def __init__(self, solver: str, truth: Truth, gpus: tuple[GpuSpec, ...], shares: Mapping[str, int]):
        self.allocate, self.weighted = GAVEL_POLICIES[solver], solver == "gavel_max_min"
        self.truth, self.gpus, self.shares = truth, gpus, shares
        self.per_server = max(Counter(g.node for g in gpus).values(), default=1)
        self.types = sorted({g.gpu_type for g in gpus})
        self.mechanism = RoundMechanism()
        self.jobs: dict[str, GavelJob] = {}  # a job's types, GPUs and throughputs, once
        self.allocation: dict[str, dict[str, float]] = {}
        self.decided_for: tuple = ()
        self.solves, self.solve_seconds = 0, 0.0

    def job(self, state: JobState, t: float, weight: float) -> GavelJob:
        if state.job.id not in self.jobs:
            self.jobs[state.job.id] = gavel_job(self.truth, state.job, self.types, self.per_server)
        return replace(self.jobs[state.job.id], weight=weight, remaining_steps=state.remaining,
                       total_steps=state.job.total_steps, elapsed_s=t - state.job.arrival_s)

    def weights(self, states: list[JobState]) -> dict[str, float]:
        """A job's entitlement over an equal one: n / (tenants' shares) x its tenant's shares / its jobs."""
        if not self.weighted:
            return {s.job.id: 1.0 for s in states}
        jobs = Counter(s.job.tenant for s in states)
        total = sum(self.shares.get(t, 1) for t in jobs)
        return {s.job.id: len(states) * self.shares.get(s.job.tenant, 1) / (total * jobs[s.job.tenant])
                for s in states}

    def round(self, states: list[JobState], alive: set[str], t: float) -> dict[str, Placement | None]:
        """Every active job's placement this round (None: it waits)."""
        capacity = Counter(g.gpu_type for g in self.gpus if g.id in alive)
        key = (tuple(sorted(s.job.id for s in states)), tuple(sorted(capacity.items())))
        if key != self.decided_for:
            started = time.perf_counter()
            weights = self.weights(states)
            self.allocation, _ = self.allocate([self.job(s, t, weights[s.job.id]) for s in states], capacity)
            self.solve_seconds += time.perf_counter() - started
            self.solves += 1
            self.decided_for = key
        chosen = self.mechanism.assign(self.allocation, {s.job.id: self.jobs[s.job.id].gpus for s in states}, capacity)
        return self.placements(states, chosen, alive)

    def placements(self, states: list[JobState], chosen: dict[str, str], alive: set[str]):
        """Concrete GPUs: a job keeps its GPUs when it stays on their type; the others, largest
        first, take the emptiest-fitting server (best fit), else spread over the freest servers."""
        free = {g.id for g in self.gpus if g.id in alive}
        out: dict[str, Placement | None] = {s.job.id: None for s in states}
        by_id = {s.job.id: s for s in states}
        for job_id, gpu_type in chosen.items():
            p = by_id[job_id].placement
            if (p is not None and p.gpu_type == gpu_type and len(p.gpu_ids) == self.jobs[job_id].gpus[gpu_type]
                    and set(p.gpu_ids) <= free):
                out[job_id] = p
                free -= set(p.gpu_ids)
        for job_id in sorted((j for j in chosen if out[j] is None), key=lambda j: (-self.jobs[j].gpus[chosen[j]], j)):
            gpu_ids = self.take(free, chosen[job_id], self.jobs[job_id].gpus[chosen[job_id]])
            free -= set(gpu_ids)
            out[job_id] = self.placement(by_id[job_id], chosen[job_id], gpu_ids)
        return out

    def take(self, free: set[str], gpu_type: str, count: int) -> tuple[str, ...]:
        servers: dict[str, list[str]] = defaultdict(list)
        for g in self.gpus:
            if g.id in free and g.gpu_type == gpu_type:
                servers[g.node].append(g.id)
        fitting = sorted((len(ids), node) for node, ids in servers.items() if len(ids) >= count)
        if fitting:
            return tuple(servers[fitting[0][1]][:count])
        spread = [g for _, node in sorted((-len(ids), node) for node, ids in servers.items()) for g in servers[node]]
        return tuple(spread[:count])

    def placement(self, state: JobState, gpu_type: str, gpu_ids: tuple[str, ...]) -> Placement:
        nodes = {g.node for g in self.gpus if g.id in gpu_ids}
        rate = self.truth.throughput(state.job.workload, gpu_type, len(gpu_ids), len(nodes) == 1)
        return Placement(state.job.id, gpu_type, gpu_ids, len(nodes) == 1, (), rate, 0.0)

    def forget(self, job_id: str) -> None:
        self.mechanism.forget(job_id)
        self.jobs.pop(job_id, None)
