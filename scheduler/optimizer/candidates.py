"""Co-location candidates: groups of jobs that could share one GPU and that the predictions
say are worth it: every member keeps its T_min while sharing, and the shared GPU costs no more
than the members' cheapest configurations alone. That bound counts each member's cheapest as if
capacity allowed all of them; a pair that only ties it saves where capacity does not (two jobs,
one cheap GPU: the pair on a dearer one beats a cheap and a dear GPU), and left out, it would be
offered the next round, once a member runs on the dear GPU, and move it with nothing changed.

A pair is a group of two; with theta >= 3 a matched pair grows, one member at a time, while a
further job saves power and the estimate of the group (telemetry/agent/colocation.py: additive
slowdown from the measured pairs, as no group of three was ever measured) keeps every member at
its T_min. Its candidates are then nested: the pair, the pair and the third, ... up to theta jobs,
so a solver can use the pair when the group does not fit or pay.

The candidates form a matching: each job is paired with at most one other job (on every GPU
type where that pair works), and belongs to at most one chain of nested groups. Overlapping
candidates would turn admission into a general matching problem whose LP relaxation is far
from integral (at 1024 GPUs the admission phase
took seconds instead of a tenth of one); a matching keeps it nearly a knapsack, and loses
little where many similar jobs wait. Groups running now are kept first (and, with theta >= 3,
may grow like new pairs, so a waiting job can join a running pair). Then training jobs, those
with the dearest configuration alone first, take the training partner with the largest saving;
within a (tenant, workload) group the partners that can afford sharing are those with the
lowest T_min, and the tightest of them is taken, leaving easier partners for later jobs. Then
each service replica (JobSpec.service) takes its partner the same way, among the replicas left
and the training jobs that were waiting, even one already in a training pair (one replica
each; a replica's pair does not grow into a chain): in `simulate --services` a replica that
took a training job as its only partner took that job's chance to pair with another training
job, and the round seldom chose the replica's pair (it moves the running replica, a dear move),
so training jobs ran alone (docs/services.md). This is the one overlap the matching allows. Jobs are
grouped so the work grows with jobs x workloads, not with jobs squared. Pairs never cross
tenants: tenant isolation by construction. A probe (exploration.py) shares with nobody: it
measures the job alone. A problem may carry the matching instead
(`Problem.matching`, set by the cells coordinator from the whole cluster's, as chains of job
ids); its groups are checked like any other (tenant, T_min, memory).
"""
import bisect
from collections import defaultdict

from .choices import Group
from .feasibility import (
    group_cost,
    group_meets_tmin,
    group_memory_fits,
    keeps_tmin,
    may_share,
    memory_fits,
    one_tenant,
    sharing_theta,
    values_surplus,
)
from .group_estimates import GroupEstimates
from .limit_levels import group_power_at
from .problem import JobSpec, Problem


def group_candidates(
    problem: Problem, jobs: tuple[JobSpec, ...], capacity, currents, weight: float, idle_on: bool,
    cheapest_alone: list[float], memory: list[float | None],
) -> list[Group]:
    """cheapest_alone[j]: objective cost of job j's cheapest option alone (inf: it has none);
    memory[j]: GB per GPU job j needs (None: unknown, counted as nothing)."""
    theta = sharing_theta(problem.settings)
    if theta < 2:
        return []
    types = [t for t, cap in capacity.items() if may_share(problem.gpu_types[t], 2, theta) and cap.gpus > 0]
    matcher = _Matcher(problem, jobs, currents, weight, idle_on, cheapest_alone, memory, types, theta)
    if problem.matching is not None:
        return matcher.fixed(problem.matching)
    return matcher.match()


class _Matcher:
    def __init__(self, problem, jobs, currents, weight, idle_on, cheapest_alone, memory, types, theta):
        self.problem, self.jobs, self.currents = problem, jobs, currents
        self.weight, self.idle_on, self.cheapest_alone, self.memory = weight, idle_on, cheapest_alone, memory
        self.types, self.theta = types, theta
        self.surplus = values_surplus(problem.settings)
        self.workloads = sorted({job.workload for job in jobs})
        self.estimates = GroupEstimates(problem, self.workloads, types)
        self.joining: dict = {}  # (chain's workloads, one more workload, type) -> estimate
        # (tenant, workload) -> sorted (T_min, job) of the jobs in no candidate yet
        self.waiting: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
        self.matched: set[int] = set()  # jobs in a candidate

    def cost(self, members: tuple[int, ...], t: str, power: float, taus: tuple[float, ...], current: bool) -> float:
        moving = tuple(self.jobs[x] for x in members if self.currents[x] is not None and not current)
        return group_cost(tuple(self.jobs[x] for x in members), self.problem.gpu_types[t], self.problem.settings, taus,
                          power, self.weight, self.idle_on, moving)

    def pin_allows(self, members: tuple[int, ...], gpu_type: str) -> bool:
        """A pinned member (keep_work.py) only stays in the group it shares now, or in part of
        it, on its GPU type: sharing the same GPU with fewer of the same partners."""
        for x in members:
            if self.jobs[x].pinned and self.currents[x] is not None:
                allowed = {self.jobs[x].id, *self.currents[x][3]}
                if self.currents[x][0] != gpu_type or not {self.jobs[y].id for y in members} <= allowed:
                    return False
        return True

    def groups_of(self, members: tuple[int, ...]) -> list[Group]:
        """The group on every type where every member keeps its T_min (on the share of its
        estimate it may count on, GroupEstimates.sure; a group running now
        stays a candidate below it: predictions fell since, and stopping it loses its work,
        unless a service replica is what misses its T_min, its latency SLO: docs/services.md), the
        memory fits and no pinned member would change GPU; none with a replica that runs alone
        (JobSpec.alone)."""
        jobs, out = self.jobs, []
        if any(jobs[x].alone for x in members):
            return out
        for t in self.types:
            spec = self.problem.gpu_types[t]
            needs = (self.memory[x] for x in members)
            if not may_share(spec, len(members), self.theta) or not group_memory_fits(needs, spec):
                continue
            found = self.estimates.estimate(tuple(jobs[x].workload for x in members), t)
            if found is None or not self.pin_allows(members, t):
                continue
            current = _is_current(jobs, self.currents, members, t)
            sure = self.estimates.sure(tuple(jobs[x].workload for x in members), t, found[0])
            if not group_meets_tmin(sure, (jobs[x] for x in members)) and (
                not current or _slo_missed(sure, (jobs[x] for x in members))
            ):
                continue
            taus, power = found
            cost = self.cost(members, t, power, taus, current)
            variants = [Group(members, t, taus, power, cost, current)]
            variants += self.at_limits(members, t, taus, sure, power, cost, current)
            # Each variant is cheaper than the one before on the same GPU; without a value on
            # surplus throughput, the faster dearer ones could never be chosen.
            out += variants if self.surplus else variants[-1:]
        return out

    def at_limits(self, members: tuple[int, ...], t: str, taus: tuple[float, ...], sure: tuple[float, ...],
                  power: float, cost: float, current: bool) -> list[Group]:
        """The group on its GPU at each lower limit (one limit for the shared GPU) where every
        member keeps its T_min at its own speed fraction and the GPU costs less than at every
        higher limit. Changing only the limit changes no GPU, so a running group stays current."""
        jobs, out = self.jobs, []
        for limit, speeds, fractions in self.estimates.at_limits(tuple(jobs[x].workload for x in members), t):
            if not group_meets_tmin((s * f for s, f in zip(sure, speeds)), (jobs[x] for x in members)):
                continue
            at_taus = tuple(tau * f for tau, f in zip(taus, speeds))
            at_power = group_power_at(power, fractions, limit)
            at_cost = self.cost(members, t, at_power, at_taus, current)
            if at_cost < cost:
                out.append(Group(members, t, at_taus, at_power, at_cost, current, limit))
                cost = at_cost
        return out

    def chain_of(self, members: tuple[int, ...], *, running: bool = False) -> list[Group]:
        """The nested groups of a chain of jobs: its first two, its first three, ... (up to
        theta), as far as each works on some GPU type (a chain running now: each that works,
        so the whole group stays a candidate when a part of it no longer would)."""
        out = []
        for k in range(2, min(len(members), self.theta) + 1):
            found = self.groups_of(members[:k])
            if not found and not running:
                break
            out += found
        return out

    def fixed(self, matching: tuple[tuple[str, ...], ...]) -> list[Group]:
        """The chains a coordinator fixed, among these jobs (checked like any other)."""
        by_id = {job.id: j for j, job in enumerate(self.jobs)}
        out = []
        for chain in matching:
            members = tuple(by_id[x] for x in chain if x in by_id)
            if len(members) == len(chain) and one_tenant(self.jobs[x] for x in members) and not any(
                self.jobs[x].probe for x in members
            ):
                out += self.chain_of(members)
        return out

    def match(self) -> list[Group]:
        jobs, cheapest_alone = self.jobs, self.cheapest_alone
        by_id = {job.id: j for j, job in enumerate(jobs)}
        matched = self.matched
        candidates: list[Group] = []
        running: list[list[Group]] = []
        for j, current in enumerate(self.currents):  # groups running now
            members = (j, *sorted(by_id.get(x, -1) for x in current[3])) if current and current[3] else ()
            if len(members) > 1 and j < min(members[1:]) and one_tenant(jobs[x] for x in members) and not any(
                jobs[x].probe for x in members if x >= 0
            ):
                found = self.chain_of(members, running=True)
                if found:
                    running.append(found)
                    candidates += found
                    matched.update(found[-1].members)
        for j, job in enumerate(jobs):
            placed_pinned = job.pinned and self.currents[j] is not None
            if j not in matched and job.max_gpus >= 1 and not job.probe and not placed_pinned:
                self.waiting[(job.tenant, job.workload)].append((job.min_throughput, j))
        for queue in self.waiting.values():
            queue.sort()
        for found in running if self.theta > 2 else ():
            if not any(jobs[x].pinned for x in found[-1].members):
                candidates += self.grow(found[-1].members, found)
        order = sorted(range(len(jobs)), key=lambda j: (-cheapest_alone[j], jobs[j].id))
        beside = {key: [e for e in queue if not jobs[e[1]].service] for key, queue in self.waiting.items()}
        candidates += self.pair_training(order)
        candidates += self.pair_replicas(order, beside)
        return candidates

    def pair_training(self, order: list[int]) -> list[Group]:
        """Training jobs, in `order`, take their partners among the waiting training jobs; each
        pair matched leaves the waiting queues (and grows into a chain with theta >= 3)."""
        jobs, candidates = self.jobs, []
        for j in order:
            if j in self.matched or jobs[j].probe or jobs[j].service:
                continue
            partner = self.best_partner(j, self.waiting)
            found = self.groups_of((min(j, partner), max(j, partner))) if partner is not None else []
            if not found:
                continue
            candidates += found
            self.matched.update((j, partner))
            for x in (j, partner):
                self.waiting[(jobs[x].tenant, jobs[x].workload)].remove((jobs[x].min_throughput, x))
            if self.theta > 2:
                candidates += self.grow(found[0].members, found)
        return candidates

    def pair_replicas(self, order: list[int], beside: dict) -> list[Group]:
        """Service replicas, in `order`, each take one partner: a training job that was waiting
        before the training pairs were matched (`beside`: matched there or not; one replica
        each), or a waiting replica. A training job may so lie in one training pair and one
        replica's pair: a replica's pair is seldom chosen (it moves the running replica, a dear
        move), and in the matching it took the training job's only chance to pair with another
        (docs/services.md, "Co-location under the SLO")."""
        jobs, candidates = self.jobs, []
        if not any(jobs[j].service for j in order):
            return candidates
        pool = {key: sorted(beside.get(key, []) + [e for e in queue if jobs[e[1]].service])
                for key, queue in self.waiting.items()}
        for j in order:
            if j in self.matched or jobs[j].probe or not jobs[j].service:
                continue
            partner = self.best_partner(j, pool)
            found = self.groups_of((min(j, partner), max(j, partner))) if partner is not None else []
            if not found:
                continue
            candidates += found
            self.matched.update(x for x in (j, partner) if jobs[x].service)
            for x in (j, partner):
                pool[(jobs[x].tenant, jobs[x].workload)].remove((jobs[x].min_throughput, x))
        return candidates

    def best_partner(self, j: int, queues: dict) -> int | None:
        """The partner in `queues` that saves the most power with job j: per workload and type,
        the tightest T_min its throughput next to j affords (easier partners stay for later); a
        training job's partner is never a replica (pair_replicas pairs those)."""
        job, best = self.jobs[j], None  # (saving, partner)
        for v in self.workloads:
            queue = queues.get((job.tenant, v))
            if not queue:
                continue
            for t in self.types:
                found = self.estimates.pair(job.workload, v, t)
                sure = found and self.estimates.sure((job.workload, v), t, found[0])
                if found is None or not keeps_tmin(sure[0], job):
                    continue
                k = bisect.bisect_right(queue, (sure[1], float("inf"))) - 1
                while k >= 0 and (queue[k][1] == j or self.jobs[queue[k][1]].service and not job.service):
                    k -= 1
                if k < 0:
                    continue
                partner = queue[k][1]
                saving = self.cheapest_alone[j] + self.cheapest_alone[partner] - self.weight * found[1]
                if saving >= 0 and (best is None or saving > best[0]):
                    best = (saving, partner)
        return None if best is None else best[1]

    def grow(self, chain: tuple[int, ...], groups: list[Group]) -> list[Group]:
        """With theta >= 3, a chain takes the waiting job of its tenant that saves the most
        power (per workload and type, the tightest T_min the group's estimate affords whose
        memory still fits), while one does; the chain's new groups."""
        jobs, added = self.jobs, []
        tenant = jobs[chain[0]].tenant
        while len(chain) < self.theta:
            now = min(g.power_w for g in groups + added if len(g.members) == len(chain))
            chain_workloads = tuple(jobs[x].workload for x in chain)
            chain_memory = sum(self.memory[x] or 0.0 for x in chain)
            best = None  # (saving, job)
            for v in self.workloads:
                queue = self.waiting.get((tenant, v))
                if not queue:
                    continue
                for t in self.types:
                    spec = self.problem.gpu_types[t]
                    if not may_share(spec, len(chain) + 1, self.theta):
                        continue
                    key = (chain_workloads, v, t)
                    if key not in self.joining:
                        self.joining[key] = self.estimates.estimate(chain_workloads + (v,), t)
                    found = self.joining[key]
                    sure = found and self.estimates.sure(chain_workloads + (v,), t, found[0])
                    if found is None or not group_meets_tmin(sure, (jobs[x] for x in chain)):
                        continue
                    k = bisect.bisect_right(queue, (sure[-1], float("inf"))) - 1
                    while k >= 0 and not memory_fits(chain_memory + (self.memory[queue[k][1]] or 0.0), spec):
                        k -= 1
                    if k < 0:
                        continue
                    c = queue[k][1]
                    saving = self.weight * now + self.cheapest_alone[c] - self.weight * found[1]
                    if saving >= 0 and (best is None or saving > best[0]):
                        best = (saving, c)
            if best is None:
                break
            chain += (best[1],)
            added += self.groups_of(chain)
            self.matched.add(best[1])
            self.waiting[(tenant, jobs[best[1]].workload)].remove((jobs[best[1]].min_throughput, best[1]))
        return added


def _slo_missed(taus, jobs) -> bool:
    """Does a service replica of the group miss its T_min (its latency SLO) while sharing?"""
    return any(job.service and tau < job.min_throughput for tau, job in zip(taus, jobs))


def _is_current(jobs, currents, members: tuple[int, ...], gpu_type: str) -> bool:
    """Do exactly these jobs share one GPU of this type now?"""
    for x in members:
        c = currents[x]
        if c is None or c[0] != gpu_type or c[1] != 1 or set(c[3]) != {jobs[y].id for y in members if y != x}:
            return False
    return len({jobs[x].current.gpu_ids for x in members}) == 1
