"""Co-location candidates: groups of jobs that could share one GPU and that the predictions
say are worth it: every member keeps its T_min while sharing, and the shared GPU costs less
than the members' cheapest configurations alone. A pair is a group of two; with theta >= 3
a matched pair grows, one member at a time, while a further job saves power and the
estimate of the group (catalog/colocation.py: additive slowdown from the measured pairs, as
no group of three was ever measured) keeps every member at its T_min. Its candidates are
then nested: the pair, the pair and the third, ... up to theta jobs, so a solver can use the
pair when the group does not fit or pay.

The candidates form a matching: each job is paired with at most one other job (on every GPU
type where that pair works), and belongs to at most one chain of nested groups. Overlapping candidates would turn admission into a general
matching problem whose LP relaxation is far from integral (at 1024 GPUs the admission phase
took seconds instead of a tenth of one); a matching keeps it nearly a knapsack, and loses
little where many similar jobs wait. Pairs running now are kept first. Then jobs, those with
the dearest configuration alone first, take the partner with the largest saving; within a
(tenant, workload) group the partners that can afford sharing are those with the lowest
T_min, and the tightest of them is taken, leaving easier partners for later jobs. Jobs are
grouped so the work grows with jobs x workloads, not with jobs squared. Pairs never cross
tenants: tenant isolation by construction. A problem may carry the matching instead
(`Problem.matching`, set by the cells coordinator from the whole cluster's, as chains of job
ids); its groups are checked like any other (tenant, T_min, memory).
"""
import bisect
from collections import defaultdict

from catalog.colocation import group_fraction

from .choices import Group
from .problem import MAX_THETA, JobSpec, Problem


def group_candidates(
    problem: Problem, jobs: tuple[JobSpec, ...], capacity, currents, weight: float, idle_on: bool, cheapest_alone: list[float],
    memory: list[float | None],
) -> list[Group]:
    """cheapest_alone[j]: objective cost of job j's cheapest option alone (inf: it has none);
    memory[j]: GB per GPU job j needs (None: unknown, counted as nothing)."""
    settings = problem.settings
    theta = min(settings.theta, MAX_THETA)
    if theta < 2:
        return []
    pred = problem.predictions
    types = [t for t, cap in capacity.items() if problem.gpu_types[t].theta >= 2 and cap.gpus > 0]
    workloads = sorted({job.workload for job in jobs})
    solo = {(w, t): pred.tau(w, t, 1, True) for w in workloads for t in types}
    util_of = {(w, t): _util(pred, w, t) for w in workloads for t in types}
    rhos = {(w, v, t): pred.rho(w, v, t) for w in workloads for v in workloads for t in types}
    shared = {}  # (w, v, t) -> (tau of w, tau of v, GPU power) while sharing
    for t in types:
        for w in workloads:
            for v in workloads:
                rw, rv = rhos[(w, v, t)], rhos[(v, w, t)]
                if solo[(w, t)] and solo[(v, t)] and rw and rv:
                    util = min(1.0, util_of[(w, t)] * rw + util_of[(v, t)] * rv)
                    shared[(w, v, t)] = (solo[(w, t)] * rw, solo[(v, t)] * rv, problem.gpu_types[t].power_curve(util))
    if not shared:
        return []

    def group_cost(members: tuple[int, ...], t: str, power: float, taus: tuple[float, ...], current: bool) -> float:
        cost = weight * (power - (problem.gpu_types[t].idle_w if idle_on else 0.0))
        cost += sum(settings.migration_cost_w for x in members if currents[x] is not None and not current)
        return cost - settings.throughput_value_w * sum(
            min(tau / jobs[x].min_throughput - 1.0, 1.0) for x, tau in zip(members, taus)
        )

    def pairs_of(j: int, partner: int) -> list[Group]:
        a, b = min(j, partner), max(j, partner)
        out = []
        for t in types:
            entry = shared.get((jobs[a].workload, jobs[b].workload, t))
            if entry is None or (memory[a] or 0.0) + (memory[b] or 0.0) > problem.gpu_types[t].memory_gb:
                continue
            tau_a, tau_b, power = entry
            if tau_a < jobs[a].min_throughput or tau_b < jobs[b].min_throughput:
                continue
            current = _is_current(jobs, currents, (a, b), t)
            out.append(Group((a, b), t, (tau_a, tau_b), power, group_cost((a, b), t, power, (tau_a, tau_b), current), current))
        return out

    estimates: dict = {}  # (sorted workloads, type) -> estimate: chains repeat the same workloads

    def estimate(workloads_: tuple[str, ...], t: str) -> tuple[tuple[float, ...], float] | None:
        """Throughputs of a group of workloads sharing one GPU of type t, in their order, and
        the GPU's power (None: some pair is unknown or does not fit)."""
        order = sorted(range(len(workloads_)), key=workloads_.__getitem__)
        key = (tuple(workloads_[i] for i in order), t)
        if key not in estimates:
            estimates[key] = _estimate(*key)
        found = estimates[key]
        if found is None:
            return None
        taus = [0.0] * len(order)
        for rank, i in enumerate(order):
            taus[i] = found[0][rank]
        return tuple(taus), found[1]

    def _estimate(workloads_: tuple[str, ...], t: str) -> tuple[tuple[float, ...], float] | None:
        taus, util = [], 0.0
        for k, w in enumerate(workloads_):
            rho = group_fraction(rhos[(w, v, t)] or 0.0 for v in workloads_[:k] + workloads_[k + 1:])
            if not rho or not solo[(w, t)]:
                return None
            taus.append(solo[(w, t)] * rho)
            util += util_of[(w, t)] * rho
        return tuple(taus), problem.gpu_types[t].power_curve(min(1.0, util))

    def groups_of(members: tuple[int, ...]) -> list[Group]:
        """The group of three or more jobs on every type where every member keeps its T_min."""
        out = []
        for t in types:
            if problem.gpu_types[t].theta < len(members):
                continue
            if sum(memory[x] or 0.0 for x in members) > problem.gpu_types[t].memory_gb:
                continue
            found = estimate(tuple(jobs[x].workload for x in members), t)
            if found is None or any(tau < jobs[x].min_throughput for x, tau in zip(members, found[0])):
                continue
            taus, power = found
            current = _is_current(jobs, currents, members, t)
            out.append(Group(members, t, taus, power, group_cost(members, t, power, taus, current), current))
        return out

    def chain_of(members: tuple[int, ...]) -> list[Group]:
        """The nested groups of a chain of jobs: its first two, its first three, ... (up to
        theta), as far as each works on some GPU type."""
        out = pairs_of(members[0], members[1])
        for k in range(3, min(len(members), theta) + 1):
            found = groups_of(members[:k]) if out else []
            if not found:
                break
            out += found
        return out

    joining: dict = {}  # (chain's workloads, one more workload, type) -> estimate

    def grow(chain: tuple[int, ...], groups: list[Group]) -> tuple[tuple[int, ...], list[Group]]:
        """With theta >= 3, a matched chain takes the waiting job that saves the most power
        (the tightest T_min of its tenant and workload that the group's estimate affords),
        while one does; (the chain, its new groups)."""
        added: list[Group] = []
        tenant = jobs[chain[0]].tenant
        while len(chain) < theta:
            now = min(g.power_w for g in (added or groups) if len(g.members) == len(chain))
            chain_workloads = tuple(jobs[x].workload for x in chain)
            best = None  # (saving, job)
            for v in workloads:
                queue = waiting.get((tenant, v))
                if not queue:
                    continue
                for t in types:
                    if problem.gpu_types[t].theta <= len(chain):
                        continue
                    key = (chain_workloads, v, t)
                    if key not in joining:
                        joining[key] = estimate(chain_workloads + (v,), t)
                    found = joining[key]
                    if found is None or any(tau < jobs[x].min_throughput for x, tau in zip(chain, found[0])):
                        continue
                    k = bisect.bisect_right(queue, (found[0][-1], float("inf"))) - 1
                    if k < 0:
                        continue
                    c = queue[k][1]
                    saving = weight * now + cheapest_alone[c] - weight * found[1]
                    if saving > 0 and (best is None or saving > best[0]):
                        best = (saving, c)
            if best is None:
                break
            found = groups_of(chain + (best[1],))
            if not found:
                break
            chain += (best[1],)
            added += found
            waiting[(tenant, jobs[best[1]].workload)].remove((jobs[best[1]].min_throughput, best[1]))
        return chain, added

    by_id = {job.id: j for j, job in enumerate(jobs)}
    if problem.matching is not None:  # fixed by a coordinator: its chains among these jobs
        out = []
        for chain in problem.matching:
            members = tuple(by_id[x] for x in chain if x in by_id)
            if len(members) == len(chain) and len({jobs[x].tenant for x in members}) == 1:
                out += chain_of(members)
        return out
    matched: set[int] = set()
    candidates: list[Group] = []
    for j, current in enumerate(currents):  # groups running now
        members = (j, *sorted(by_id.get(x, -1) for x in current[3])) if current and current[3] else ()
        if len(members) > 1 and j < min(members[1:]) and len({jobs[x].tenant for x in members}) == 1:
            found = chain_of(members)
            if found:
                candidates += found
                matched.update(x for g in found for x in g.members)
    waiting: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)  # (tenant, workload) -> sorted (T_min, j)
    for j, job in enumerate(jobs):
        if j not in matched and job.max_gpus >= 1:
            waiting[(job.tenant, job.workload)].append((job.min_throughput, j))
    for queue in waiting.values():
        queue.sort()
    for j in sorted(range(len(jobs)), key=lambda j: (-cheapest_alone[j], jobs[j].id)):
        if j in matched:
            continue
        job = jobs[j]
        best = None  # (saving, partner)
        for v in workloads:
            queue = waiting.get((job.tenant, v))
            if not queue:
                continue
            for t in types:
                entry = shared.get((job.workload, v, t))
                if entry is None or entry[0] < job.min_throughput:
                    continue
                k = bisect.bisect_right(queue, (entry[1], float("inf"))) - 1  # tightest partner affording it
                while k >= 0 and queue[k][1] == j:
                    k -= 1
                if k < 0:
                    continue
                partner = queue[k][1]
                saving = cheapest_alone[j] + cheapest_alone[partner] - weight * entry[2]
                if saving > 0 and (best is None or saving > best[0]):
                    best = (saving, partner)
        if best is None:
            continue
        partner = best[1]
        found = pairs_of(j, partner)
        if not found:
            continue
        candidates += found
        matched.update((j, partner))
        for x in (j, partner):
            queue = waiting[(jobs[x].tenant, jobs[x].workload)]
            queue.remove((jobs[x].min_throughput, x))
        if theta > 2:
            chain, added = grow(found[0].members, found)
            candidates += added
            matched.update(chain)
    return candidates


def _util(pred, workload: str, gpu_type: str) -> float:
    u = pred.utilisation(workload, gpu_type)
    return 1.0 if u is None else u


def _is_current(jobs, currents, members: tuple[int, ...], gpu_type: str) -> bool:
    """Do exactly these jobs share one GPU of this type now?"""
    for x in members:
        c = currents[x]
        if c is None or c[0] != gpu_type or c[1] != 1 or set(c[3]) != {jobs[y].id for y in members if y != x}:
            return False
    return len({jobs[x].current.gpu_ids for x in members}) == 1
