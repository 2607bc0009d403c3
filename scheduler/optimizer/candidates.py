"""Co-location candidates: pairs of jobs that could share one GPU and that the predictions
say are worth it: both keep their T_min while sharing, and the shared GPU costs less than the
two jobs' cheapest configurations alone.

The candidates form a matching: each job is paired with at most one other job (on every GPU
type where that pair works). Overlapping candidates would turn admission into a general
matching problem whose LP relaxation is far from integral (at 1024 GPUs the admission phase
took seconds instead of a tenth of one); a matching keeps it nearly a knapsack, and loses
little where many similar jobs wait. Pairs running now are kept first. Then jobs, those with
the dearest configuration alone first, take the partner with the largest saving; within a
(tenant, workload) group the partners that can afford sharing are those with the lowest
T_min, and the tightest of them is taken, leaving easier partners for later jobs. Jobs are
grouped so the work grows with jobs x workloads, not with jobs squared. Pairs never cross
tenants: tenant isolation by construction. A problem may carry the matching instead
(`Problem.matching`, set by the cells coordinator from the whole cluster's); its pairs are
checked like any other (tenant, T_min, memory).
"""
import bisect
from collections import defaultdict

from .choices import Pair
from .problem import JobSpec, Problem


def pair_candidates(
    problem: Problem, jobs: tuple[JobSpec, ...], capacity, currents, weight: float, idle_on: bool, cheapest_alone: list[float],
    memory: list[float | None],
) -> list[Pair]:
    """cheapest_alone[j]: objective cost of job j's cheapest option alone (inf: it has none);
    memory[j]: GB per GPU job j needs (None: unknown, counted as nothing)."""
    settings = problem.settings
    if settings.theta < 2:
        return []
    pred = problem.predictions
    types = [t for t, cap in capacity.items() if problem.gpu_types[t].theta >= 2 and cap.gpus > 0]
    workloads = sorted({job.workload for job in jobs})
    solo = {(w, t): pred.tau(w, t, 1, True) for w in workloads for t in types}
    shared = {}  # (w, v, t) -> (tau of w, tau of v, GPU power) while sharing
    for t in types:
        for w in workloads:
            for v in workloads:
                rw, rv = pred.rho(w, v, t), pred.rho(v, w, t)
                if solo[(w, t)] and solo[(v, t)] and rw and rv:
                    util = min(1.0, _util(pred, w, t) * rw + _util(pred, v, t) * rv)
                    shared[(w, v, t)] = (solo[(w, t)] * rw, solo[(v, t)] * rv, problem.gpu_types[t].power_curve(util))
    if not shared:
        return []

    def pair_cost(a: int, b: int, t: str, power: float, taus: tuple[float, float], current: bool) -> float:
        cost = weight * (power - (problem.gpu_types[t].idle_w if idle_on else 0.0))
        cost += sum(settings.migration_cost_w for x in (a, b) if currents[x] is not None and not current)
        return cost - settings.throughput_value_w * sum(
            min(tau / jobs[x].min_throughput - 1.0, 1.0) for x, tau in zip((a, b), taus)
        )

    def pairs_of(j: int, partner: int) -> list[Pair]:
        a, b = min(j, partner), max(j, partner)
        out = []
        for t in types:
            entry = shared.get((jobs[a].workload, jobs[b].workload, t))
            if entry is None or (memory[a] or 0.0) + (memory[b] or 0.0) > problem.gpu_types[t].memory_gb:
                continue
            tau_a, tau_b, power = entry
            if tau_a < jobs[a].min_throughput or tau_b < jobs[b].min_throughput:
                continue
            current = _is_current(jobs, currents, a, b, t)
            out.append(Pair(a, b, t, tau_a, tau_b, power, pair_cost(a, b, t, power, (tau_a, tau_b), current), current))
        return out

    by_id = {job.id: j for j, job in enumerate(jobs)}
    if problem.matching is not None:  # fixed by a coordinator: its pairs among these jobs
        return [
            pair for a, b in problem.matching if a in by_id and b in by_id and jobs[by_id[a]].tenant == jobs[by_id[b]].tenant
            for pair in pairs_of(by_id[a], by_id[b])
        ]
    matched: set[int] = set()
    pairs: list[Pair] = []
    for j, current in enumerate(currents):  # pairs running now
        partner = by_id.get(current[3]) if current and current[3] else None
        if partner is not None and j < partner and jobs[j].tenant == jobs[partner].tenant:
            found = pairs_of(j, partner)
            if found:
                pairs += found
                matched.update((j, partner))
    waiting: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)  # (tenant, workload) -> sorted (T_min, j)
    for j, job in enumerate(jobs):
        if j not in matched and job.max_gpus >= 1:
            waiting[(job.tenant, job.workload)].append((job.min_throughput, j))
    for group in waiting.values():
        group.sort()
    for j in sorted(range(len(jobs)), key=lambda j: (-cheapest_alone[j], jobs[j].id)):
        if j in matched:
            continue
        job = jobs[j]
        best = None  # (saving, partner)
        for v in workloads:
            group = waiting.get((job.tenant, v))
            if not group:
                continue
            for t in types:
                entry = shared.get((job.workload, v, t))
                if entry is None or entry[0] < job.min_throughput:
                    continue
                k = bisect.bisect_right(group, (entry[1], float("inf"))) - 1  # tightest partner affording it
                while k >= 0 and group[k][1] == j:
                    k -= 1
                if k < 0:
                    continue
                partner = group[k][1]
                saving = cheapest_alone[j] + cheapest_alone[partner] - weight * entry[2]
                if saving > 0 and (best is None or saving > best[0]):
                    best = (saving, partner)
        if best is None:
            continue
        partner = best[1]
        found = pairs_of(j, partner)
        if not found:
            continue
        pairs += found
        matched.update((j, partner))
        for x in (j, partner):
            group = waiting[(jobs[x].tenant, jobs[x].workload)]
            group.remove((jobs[x].min_throughput, x))
    return pairs


def _util(pred, workload: str, gpu_type: str) -> float:
    u = pred.utilisation(workload, gpu_type)
    return 1.0 if u is None else u


def _is_current(jobs, currents, a: int, b: int, gpu_type: str) -> bool:
    ca, cb = currents[a], currents[b]
    return (
        ca is not None and cb is not None and ca[0] == cb[0] == gpu_type and ca[1] == cb[1] == 1
        and ca[3] == jobs[b].id and cb[3] == jobs[a].id
        and jobs[a].current.gpu_ids == jobs[b].current.gpu_ids
    )
