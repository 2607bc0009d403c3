"""`cells`: hierarchical scheduling for large clusters.

Nodes are partitioned into cells, by their cell label when they have one, otherwise
automatically: the nodes, type by type, are dealt round-robin over ceil(GPUs / cell size) cells,
so every cell holds a slice of every type (when there are enough nodes of it). An upper
coordinator routes jobs to cells: a placed or running job to the cell it runs in, any other job
to a cell with room for the configuration the whole cluster's admission decision gives it
(cell_routing.py), and fixes the co-location matching for the whole cluster; jobs that decision,
when proven to admit the most, leaves out go to no cell. Each cell is then solved alone with the
ILP; jobs a cell could not admit, and those, get a second chance, in one more (small) ILP over
the GPUs all cells left free (with topology-aware isolation: first per tenant on the free GPUs
of switches it owns, then on switches nobody owns; see second_chances). `run_cells` maps the
per-cell solve: in turn by default, or as a Celery group from the Django shell. Admission comes
first: when the cells admit lexicographically less than the global decision (some of its jobs
fit no single cell, or a cell's solve stopped at its time limit), that decision is placed
instead (admission_check). A cell whose solve stops without an answer keeps its share of the
decision (the ILP falls back to its admission start), and the plan says so. Time limits count
CPU seconds (cpu_clock.py).
"""
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace

from .base import Outcome, Solver, finish, settings_notes
from .cell_routing import Routing, route
from .cpu_clock import cpu_now
from .ilp import IlpSolver
from .problem import Plan, Problem
from .quotas import CELLS_WHOLE, binding
from .reasons import pending_reason
from .start import rows_of

CellRunner = Callable[[list[Problem]], list[Plan]]


def solve_in_turn(problems: list[Problem]) -> list[Plan]:
    return [IlpSolver().solve(p) for p in problems]


def partition(problem: Problem) -> dict[str, list]:
    """Cell name -> GPUs."""
    settings = problem.settings
    if all(g.cell for g in problem.gpus) and problem.gpus:
        label: dict[str, str] = {}  # a node lies in one cell: its first GPU's label
        cells = defaultdict(list)
        for gpu in problem.gpus:
            cells[label.setdefault(gpu.node, gpu.cell)].append(gpu)
        return dict(cells)
    count = max(1, math.ceil(len(problem.gpus) / max(1, settings.cell_size_gpus)))
    nodes_by_type: dict[str, list[str]] = defaultdict(list)
    for gpu in problem.gpus:
        if gpu.node not in nodes_by_type[gpu.gpu_type]:
            nodes_by_type[gpu.gpu_type].append(gpu.node)
    cell_of, dealt = {}, 0
    for gpu_type in sorted(nodes_by_type):
        for node in sorted(nodes_by_type[gpu_type]):
            cell_of[node] = f"cell-{dealt % count}"
            dealt += 1
    cells = defaultdict(list)
    for gpu in problem.gpus:
        cells[cell_of[gpu.node]].append(gpu)
    return dict(cells)


class CellsSolver(Solver):
    name = "cells"
    formulates_quotas = True  # with quotas, it solves the whole cluster with the ILP (quotas.CELLS_WHOLE)

    def __init__(self, run_cells: CellRunner = solve_in_turn):
        self.run_cells = run_cells

    def solve(self, problem: Problem) -> Plan:
        started, cpu_started = time.perf_counter(), cpu_now()
        cells = partition(problem)
        whole = len(cells) > 1 and binding(problem)
        if len(cells) <= 1 or whole:
            plan = IlpSolver().solve(problem)
            plan.solver = self.name
            plan.notes += [CELLS_WHOLE] if whole else []
            return plan
        routing = route(problem, cells, cpu_started)
        routed, matching = routing.routed, routing.matching
        sub_settings = replace(problem.settings, time_limit_s=max(0.5, problem.settings.time_limit_s / len(cells)))
        names = sorted(cells)
        cell_problems = []
        for name in names:
            ids = {job.id for job in routed[name]}
            cell_problems.append(replace(
                problem, jobs=tuple(routed[name]), gpus=tuple(cells[name]), settings=sub_settings,
                matching=tuple(chain for chain in (_within(chain, ids) for chain in matching) if len(chain) > 1),
                admission_start=rows_of(routing.inst, routing.guide, ids),
            ))
        results = self.run_cells(cell_problems)
        placements, used = {}, set()
        reasons = {routing.inst.jobs[j].id: pending_reason(routing.inst, j, self.name, True) for j in routing.unrouted}
        for result in results:
            placements.update(result.placements)
            reasons.update(result.reasons)
            for placement in result.placements.values():
                used.update(placement.gpu_ids)
        second_objective = 0.0
        for jobs, gpus in second_chances(problem, placements, used):
            second = IlpSolver().solve(replace(problem, jobs=jobs, gpus=gpus))
            placements.update(second.placements)
            # a cell's or the coordinator's reason stands (the second chance sees only the GPUs left)
            reasons = {job_id: why for job_id, why in {**second.reasons, **reasons}.items() if job_id not in placements}
            used.update(g for p in second.placements.values() for g in p.gpu_ids)
            second_objective += second.objective
        power = sum(p.predicted_power_w for p in placements.values())
        if not problem.settings.idle_gpus_powered_down:
            power += sum(problem.gpu_types[g.gpu_type].idle_w for g in problem.gpus if g.id not in used)
        fallbacks = [r.fallback_reason for r in results if r.fallback_reason]
        statuses = {r.status for r in results}
        notes = [f"{len(cells)} cells of {', '.join(str(len(cells[n])) for n in names)} GPUs"]
        notes += [routing.note] if routing.note else []
        fell_back = [f"A cell's solve fell back: {why}" for why in fallbacks]  # said by fallback_reason otherwise
        guided = admission_check(problem, routing, placements, started, cpu_started, notes + fell_back)
        if guided is not None:
            return guided
        return Plan(
            solver=self.name,
            placements=placements,
            reasons=reasons,
            power_w=power,
            objective=sum(r.objective for r in results) + second_objective,
            status=(
                "fallback" if fallbacks
                else ("optimal" if statuses == {"optimal"} and not routing.note else "feasible")
            ),
            energy_weight=results[0].energy_weight,
            load=results[0].load,
            seconds=time.perf_counter() - started,
            variables=sum(r.variables for r in results),
            constraints=sum(r.constraints for r in results),
            fallback_reason="; ".join(fallbacks[:3]),
            notes=settings_notes(problem) + notes,
        )


def second_chances(problem: Problem, placements: dict, used: set):
    """Yield (jobs, GPUs) for the second chance of the jobs no cell admitted, over the GPUs
    all cells left free. With topology-aware isolation the cells' placements own PCIe
    switches, which a problem over the free GPUs cannot see; so each tenant first gets the
    free GPUs on switches it already owns, then all jobs still waiting share the GPUs on
    switches nobody owns (whose placement gives each switch to one tenant). Placed jobs are
    read from `placements` between passes."""
    def waiting() -> tuple:
        return tuple(job for job in problem.jobs if job.id not in placements)

    free = [g for g in problem.gpus if g.id not in used]
    if not waiting() or not free:
        return
    if not problem.settings.topology_isolation:
        yield waiting(), tuple(free)
        return
    gpu_by_id = {g.id: g for g in problem.gpus}
    tenant_of = {job.id: job.tenant for job in problem.jobs}
    owner = {}
    for placement in placements.values():
        for g in placement.gpu_ids:
            if gpu_by_id[g].pcie_switch:
                owner[(gpu_by_id[g].node, gpu_by_id[g].pcie_switch)] = tenant_of[placement.job_id]
    owned = defaultdict(list)
    for g in free:
        if g.pcie_switch and (g.node, g.pcie_switch) in owner:
            owned[owner[(g.node, g.pcie_switch)]].append(g)
    for tenant in sorted(owned):
        jobs = tuple(job for job in waiting() if job.tenant == tenant)
        if jobs:
            yield jobs, tuple(owned[tenant])
    unowned = tuple(g for g in free if not g.pcie_switch or (g.node, g.pcie_switch) not in owner)
    if waiting() and unowned:
        yield waiting(), unowned


GUIDE_SOLVED = (
    "The cells admitted fewer jobs (by priority) than the coordinator's global admission decision (a job "
    "fitting no single cell as chosen, or a cell's solve stopped at its time limit); the whole cluster was "
    "solved from that decision instead (admission first, then power)."
)
GUIDE_TAKEN = (
    "The cells admitted fewer jobs (by priority) than the coordinator's global admission decision, and no "
    "time was left to solve the whole cluster from it; that decision was placed as it is (admission first; "
    "its power is not minimised)."
)


def admission_check(problem: Problem, routing: Routing, placements: dict, started: float, cpu_started: float,
                    notes: list[str]) -> Plan | None:
    """When the global admission decision that guided the routing admits lexicographically more
    (per priority level, highest first) than the cells did, the answer that honours it; None
    otherwise. The cells admit at least what the decision routed into them (each cell's program
    is lexicographically optimal for its jobs and the decision's share of it is feasible there),
    so they fall short only when some of its jobs fit no cell as chosen (a block no single cell
    has room for) or a cell stopped at its time limit. Then the whole cluster is solved by the
    ILP starting from the decision, with the time left (its power phase minimises power and
    migrations at that admission), or, with no time left or no better answer, the decision is
    placed as it is: `cells` never admits less than it (docs/optimization.md, "Cells").
    `started`: wall clock, for the seconds reported; `cpu_started`: the CPU clock of the time
    limit (cpu_clock.py)."""
    inst, guide = routing.inst, routing.guide
    by_cells = _by_level(inst, set(placements))
    wanted = _by_level(inst, {inst.jobs[j].id for j, choice in enumerate(guide) if choice is not None})
    if by_cells >= wanted:
        return None
    left = problem.settings.time_limit_s - (cpu_now() - cpu_started)
    if left >= MIN_WHOLE_SOLVE_S:
        whole = IlpSolver().solve(replace(
            problem, matching=routing.matching, settings=replace(problem.settings, time_limit_s=left),
            admission_start=rows_of(inst, guide, {job.id for job in inst.jobs}),
        ))
        if _by_level(inst, set(whole.placements)) >= wanted:
            whole.solver, whole.notes = CellsSolver.name, notes + whole.notes + [GUIDE_SOLVED]
            whole.seconds = time.perf_counter() - started
            return whole
    plan = finish(inst, Outcome(guide, notes=notes + [GUIDE_TAKEN]), CellsSolver.name, True, started)
    return plan if _by_level(inst, set(plan.placements)) > by_cells else None


#: Seconds the whole-cluster solve needs at least to be worth trying (else the decision is placed).
MIN_WHOLE_SOLVE_S = 0.5


def _by_level(inst, admitted: set[str]) -> list[int]:
    """Jobs admitted per priority level among the given ids, highest level first (compared
    lexicographically). Counts, not admission values: the fairness bonus only breaks ties
    between tenants, which is not worth placing a decision whose power is not minimised."""
    got = Counter(job.priority for job in inst.jobs if job.id in admitted)
    return [got[level] for level in sorted({job.priority for job in inst.jobs}, reverse=True)]


def _within(chain: tuple[str, ...], ids: set[str]) -> tuple[str, ...]:
    """The longest start of a chain of nested co-location groups whose jobs are all in a cell
    (a member routed elsewhere ends the chain there: the groups beyond it need it)."""
    for k, job_id in enumerate(chain):
        if job_id not in ids:
            return chain[:k]
    return chain
