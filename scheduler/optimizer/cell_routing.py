"""The `cells` coordinator's routing: which cell each job goes to.

Each cell solves its own jobs alone, so the routing decides what the cells can admit together.
Routing by room (each job to the cell with the most GPUs left of its cheapest type) admitted
28 priority-0 jobs fewer than the global ILP on the 6144-GPU benchmark instance: every cell
spent its P100s and V100s on jobs that could also run on K80s, kept K80s idle, and jobs that
need a P100 or V100 waited in other cells. Re-solving cells with the jobs left pending did not
help there (each cell was at its own optimum for every job offered). So the coordinator
routes by a global decision: the most admitted per priority level on the aggregated model of
the whole cluster (relaxation.exact_choices: the rounded LP relaxation of admission when it
provably admits the most, else the integer program; its size depends on jobs and GPU types,
not on GPUs), which says for each job a GPU type, a GPU count and whether it shares; each job
then goes to a cell with room for exactly that (block capacity levels per cell), a pair's two
jobs to the same cell. Routing is bin packing, so the order matters: largest consolidated
block first, then most GPUs (a job spread over 8 GPUs before single GPUs: ranked by its block
of 1 among the single-GPU jobs, such jobs came last and found every cell's last GPUs taken,
which lost 1-2 priority-0 jobs at 6144 GPUs). Jobs the decision leaves out, or that fit no cell
as chosen, go by room. Placed and running jobs stay in the cell they run in.
"""
from collections import defaultdict
from dataclasses import dataclass

from .aggregation import aggregate, block_sizes
from .choices import Choice
from .feasibility import meets_tmin
from .greedy import cheapest, greedy_choices
from .ilp_model import level_maxima
from .instance import Instance, compile_instance
from .problem import JobSpec, Problem
from .relaxation import exact_choices, full_levels

# Of the time limit, at most, for the global decision that guides routing (compiling the whole
# instance, the greedy decision, the relaxation and, when rounding it falls short, the integer
# program: 2.3 s at 6144 GPUs at load 2, so a quarter of the default 10 s ran out under load and
# the rounded decision, one job short, guided instead; the limit now counts CPU time, which
# load does not take away: cpu_clock.py).
GUIDE_SHARE = 0.5
GUIDE_GREEDY = (
    "The coordinator's admission decision is the greedy one: the LP relaxation of admission had no time left "
    "(or HiGHS failed), so the cells may admit fewer jobs than the whole cluster can run."
)
GUIDE_ROUNDED = (
    "The coordinator's admission decision is the rounded LP relaxation, not proven to admit the most: the "
    "integer program of admission had no time left, so the cells may admit fewer jobs than the whole cluster can run."
)


@dataclass
class Routing:
    routed: dict[str, list[JobSpec]]  # cell name -> its jobs
    matching: tuple[tuple[str, ...], ...]  # the whole cluster's co-location matching, as chains of job ids
    inst: Instance  # the whole cluster's aggregated instance
    guide: list[Choice]  # the global admission decision the routing followed
    unrouted: list[int]  # jobs (indices in inst) no cell gets: the proven decision leaves them out
    note: str = ""  # why the decision is not proven to admit the most, when its time ran out


def route(problem: Problem, cells: dict[str, list], started: float) -> Routing:
    """Each job's cell, guided by the global admission decision (see the module's text).
    `started`: when the solve started, on the CPU clock of time limits (cpu_clock.py)."""
    inst = compile_instance(problem)
    greedy = greedy_choices(inst, inst.admission_order(), cheapest)
    deadline = started + GUIDE_SHARE * problem.settings.time_limit_s
    full = full_levels(inst, greedy)
    exact = exact_choices(inst, deadline, full)
    guide, proven = exact or (greedy, False)
    note = "" if proven or set(level_maxima(inst)) <= full else (GUIDE_ROUNDED if exact else GUIDE_GREEDY)
    cell_of_gpu = {g.id: name for name, gpus in cells.items() for g in gpus}
    room = {name: _levels(gpus) for name, gpus in cells.items()}
    routed: dict[str, list[JobSpec]] = {name: [] for name in cells}
    home: dict[int, str] = {}
    taken: set = set()  # a group's GPU is taken once, not once per member
    for j, job in enumerate(inst.jobs):  # running and placed jobs stay where they are
        if job.current is not None and job.current.gpu_ids and job.current.gpu_ids[0] in cell_of_gpu:
            home[j] = cell_of_gpu[job.current.gpu_ids[0]]
            if guide[j] not in taken:
                _take(inst, room[home[j]], guide[j])
                taken.add(guide[j])
    for j in sorted(range(len(inst.jobs)), key=lambda j: (-_block(inst, guide[j]), -_gpus(inst, guide[j]), j)):
        if j in home or guide[j] is None:
            continue
        partner = next((x for x in inst.groups[guide[j][1]].members if x in home), None) if guide[j][0] == "g" else None
        if partner is not None:
            home[j] = home[partner]
            continue
        fitting = [name for name in sorted(cells) if _fits(inst, room[name], guide[j])]
        if fitting:
            home[j] = max(fitting, key=lambda name: _room_for(inst, room[name], guide[j]))
            _take(inst, room[home[j]], guide[j])
    # Jobs a proven decision leaves out could only take the place of one of its jobs of the same
    # level: no cell gets them, and they wait for the second chance (unrouted).
    left = [j for j in range(len(inst.jobs)) if j not in home and not (proven and guide[j] is None)]
    by_room = _route_by_room(problem, [inst.jobs[j] for j in left], room)
    for j, name in home.items():
        routed[name].append(inst.jobs[j])
    for name, jobs in by_room.items():
        routed[name].extend(jobs)
    unrouted = sorted(set(range(len(inst.jobs))) - set(home) - set(left))
    matching = _chains(inst)
    return Routing(routed, matching, inst, guide, unrouted, note)


def _chains(inst: Instance) -> tuple[tuple[str, ...], ...]:
    """The co-location candidates as chains of job ids, one per chain of nested groups (its
    longest group; candidates.py offers its prefixes again), in the candidates' order."""
    longest: dict[tuple[int, int], tuple[int, ...]] = {}
    for group in inst.groups:
        key = group.members[:2]
        if len(group.members) > len(longest.get(key, ())):
            longest[key] = group.members
    return tuple(tuple(inst.jobs[x].id for x in members) for members in longest.values())


def _levels(gpus: list) -> dict[tuple[str, int], int]:
    return {(t, s): n for t, cap in aggregate(tuple(gpus)).items() for s, n in cap.levels.items()}


def _block(inst: Instance, choice: Choice) -> int:
    """GPUs of the largest block a choice needs (routing order: largest first, as in bin packing)."""
    return max((s for _, s, _ in inst.usage(choice)), default=0) if choice else 0


def _gpus(inst: Instance, choice: Choice) -> int:
    """GPUs a choice takes (a group's one GPU counts for each of its jobs)."""
    return max((n for _, _, n in inst.usage(choice)), default=0) if choice else 0


def _fits(inst: Instance, room: dict, choice: Choice) -> bool:
    return all(room.get((t, s), 0) >= n for t, s, n in inst.usage(choice))


def _take(inst: Instance, room: dict, choice: Choice) -> None:
    for t, s, n in inst.usage(choice):
        room[(t, s)] = room.get((t, s), 0) - n


def _room_for(inst: Instance, room: dict, choice: Choice) -> int:
    """Room left at the choice's largest block level of its type (spread load evenly)."""
    t, s, _ = max(inst.usage(choice), key=lambda u: u[1])
    return room.get((t, s), 0)


def _route_by_room(problem: Problem, jobs: list[JobSpec], room: dict[str, dict]) -> dict[str, list[JobSpec]]:
    """Jobs without a guided cell, by priority: to the cell with the most single GPUs left of
    the type of their cheapest configuration meeting T_min (any type when none meets it)."""
    routed: dict[str, list[JobSpec]] = defaultdict(list)
    types = sorted({t for cell in room.values() for t, _ in cell})
    for job in sorted(jobs, key=lambda j: (-j.priority, j.id)):
        gpu_type, need = _cheapest_type(problem, job, types)
        name = max(sorted(room), key=lambda c: room[c].get((gpu_type, 1), 0) if gpu_type else
                   sum(n for (_, s), n in room[c].items() if s == 1))
        if gpu_type:
            room[name][(gpu_type, 1)] = room[name].get((gpu_type, 1), 0) - need
        routed[name].append(job)
    return routed


def _cheapest_type(problem: Problem, job: JobSpec, types: list[str]) -> tuple[str | None, int]:
    """GPU type and GPU count of the job's cheapest (in power) configuration meeting T_min (a
    probe: its D_j on its type)."""
    best = (float("inf"), None, 1)
    for gpu_type in types if job.only_gpu_type is None else [t for t in types if t == job.only_gpu_type]:
        spec = problem.gpu_types[gpu_type]
        for k in block_sizes(job.max_gpus):
            tau = problem.predictions.tau(job.workload, gpu_type, k, True)
            if job.probe and k == block_sizes(job.max_gpus)[-1] or meets_tmin(tau, job):
                best = min(best, (k * spec.power_curve(1.0), gpu_type, k))
                break
    return best[1], best[2]
