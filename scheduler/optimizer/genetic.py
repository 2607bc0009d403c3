"""`genetic`: a seeded genetic algorithm over one gene per job (its option, its co-location
group, or nothing), with admission-aware repair and local search.

fitness = 1 / (1 + power_weight * energy + latency_weight * slo_violation), with energy the
decision's cost relative to the greedy decision's and slo_violation the admission value left
out, in units of one lowest-priority job (jobs that could have run at their T_min but wait;
a job of a higher priority counts for more than all jobs below it together, see
admission.py). With a fairness weight the cost includes the ILP's fairness term (minus lambda
times the least-served tenant's share, fairness.py). With latency_weight 10^4 one job left out
outweighs any power saving, so admission comes first here too.

Every individual is a feasible decision:
- decode: genes in admission order against the capacity ledger; a gene that does not fit, or
  a group its partners did not all choose, is replaced by the job's cheapest fitting option;
- repair (admission-aware), jobs left out in admission order: the cheapest option or group
  that fits, or joining partners that run on one GPU of the group's type (alone, or as a
  smaller group of the same chain); when some still
  wait (deep repair), room is made: running multi-GPU jobs shrink to fewer GPUs of another
  type (single-GPU jobs or groups of that type moving over to make space), and the GPU types
  no waiting job can use are flooded with running jobs from the types they need; then a job
  of a higher priority evicts the least valuable jobs of lower levels in its way, which get
  their own turn; finally one running job makes way for waiting jobs worth
  more than it (swap);
- local search (power, admission unchanged): each placed job moves to a cheaper configuration
  that fits, and co-location partners running alone (or as a smaller group) share one GPU
  where that is cheaper.
Crossover takes each gene from either parent (uniform) and decode + repair make the child
feasible; mutation redraws a few genes. The first population holds the greedy decision and
the rounded LP relaxation of admission (relaxation.py: HiGHS on the continuous admission
program, no integer search; without it the greedy-seeded search admitted 26 jobs fewer than
the ILP at 6144 GPUs), or the group-first decision (greedy.group_first_choices) where the
relaxation is unavailable, each repaired, and mutants of them; the elite is kept, so the
answer is never worse by the fitness than either.

Stop criterion: a generation budget, so that the same seed gives the same allocation on any
machine: settings.genetic_generations, lowered for large instances so that the work
(population x generations x jobs) stays below WORK_BUDGET gene decodes. The round's time limit
remains a safety net only, counted in CPU seconds (cpu_clock.py): a run that reaches it stops
early and says so in its notes (its answer may then depend on the machine's speed), and so
does a run whose relaxation had no time left. The elite is kept, so the answer admits at
least what its best seed admits (one job left out outweighs any power saving).
"""
import random

from .base import Outcome, Solver
from .capacity import CapacityLedger
from .choices import Choice
from .cpu_clock import cpu_now
from .fairness import fairness_price_w, least_share, rate as job_rate, tenant_sizes
from .greedy import cheapest, greedy_choices, group_first_choices
from .ilp_model import admitted_value, level_maxima, objective
from .instance import Instance
from .relaxation import full_levels, rounded_choices

POWER_WEIGHT = 1.0
LATENCY_WEIGHT = 1e4
TOURNAMENT = 3
ELITE = 2
WORK_BUDGET = 100_000  # gene decodes (population x generations x jobs) per run, at most
MIN_GENERATIONS = 1
POLISH_ROUNDS = 3  # deep repair + descent rounds, at most, on the seeds and the answer
NO_RELAXATION = (
    "The LP relaxation of admission was unavailable (no time left, or HiGHS failed): the first population held "
    "the greedy and group-first decisions only, which may admit fewer jobs."
)


class _State:
    """A decision with its capacity ledger, changed job by job."""

    def __init__(self, inst: Instance, choices: list[Choice], usage: dict):
        self.inst = inst
        self.usage = usage  # choice -> ((type, block size), GPUs) pairs, computed once
        self.choices = list(choices)
        self.ledger = CapacityLedger(inst)
        seen = set()
        for choice in self.choices:
            if choice is not None and choice not in seen:
                seen.add(choice)
                self.ledger.take(choice)

    def fits(self, choice: Choice) -> bool:
        free = self.ledger.free
        return all(free.get(key, 0) >= n for key, n in self.usage[choice])

    def take(self, j: int, choice: Choice) -> None:
        free = self.ledger.free
        for key, n in self.usage[choice]:
            free[key] -= n
        for x in self.inst.jobs_of(choice):
            self.choices[x] = choice

    def drop(self, j: int) -> list[int]:
        """Release job j's choice (a group releases all its jobs); the jobs released."""
        choice = self.choices[j]
        if choice is None:
            return []
        free = self.ledger.free
        for key, n in self.usage[choice]:
            free[key] += n
        jobs = list(self.inst.jobs_of(choice))
        for x in jobs:
            self.choices[x] = None
        return jobs


class GeneticSolver(Solver):
    name = "genetic"

    def decide(self, inst: Instance) -> Outcome:
        settings = inst.problem.settings
        rng = random.Random(settings.seed)
        deadline = cpu_now() + settings.time_limit_s
        order = inst.admission_order()
        rank = {j: r for r, j in enumerate(order)}
        n_jobs = len(inst.jobs)
        opts = [sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i)) for j in range(n_jobs)]
        genes = [[("o", i) for i in opts[j]] + [("g", p) for p in inst.job_groups[j]] for j in range(n_jobs)]
        mutable = [j for j in range(n_jobs) if len(genes[j]) > 1 or inst.job_groups[j]]
        placeable = [j for j in order if genes[j]]
        by_type: dict[str, list[int]] = {}  # GPU type -> jobs with an option there (for making room)
        for j in placeable:
            types = {inst.all_options[i].gpu_type for i in opts[j]}
            types |= {inst.groups[p].gpu_type for p in inst.job_groups[j]}
            for t in types:
                by_type.setdefault(t, []).append(j)
        cheapest_first = {t: sorted(js, key=lambda w: (inst.values[w], -rank[w])) for t, js in by_type.items()}
        types_of = [{inst.type_of(c) for c in genes[j]} for j in range(n_jobs)]
        same_jobs: dict[tuple[int, ...], list[int]] = {}
        for p, group in enumerate(inst.groups):
            same_jobs.setdefault(group.members, []).append(p)
        siblings = [same_jobs[group.members] for group in inst.groups]  # groups of the same jobs, any type
        singles: dict[tuple[str, str], list[int]] = {}  # (from type, to type) -> jobs with one GPU on each
        for j in reversed(order):
            one = {inst.all_options[i].gpu_type for i in opts[j] if inst.all_options[i].num_gpus == 1}
            for a in one:
                for b in one - {a}:
                    singles.setdefault((a, b), []).append(j)
        group_moves: dict[tuple[str, str], list[tuple[int, int]]] = {}  # (from, to type) -> (group, same group there)
        for p, group in enumerate(inst.groups):
            for q in siblings[p]:
                if inst.groups[q].gpu_type != group.gpu_type:
                    group_moves.setdefault((group.gpu_type, inst.groups[q].gpu_type), []).append((p, q))
        usage = {c: tuple(((t, s), n) for t, s, n in inst.usage(c)) for row in genes for c in row}
        greedy = greedy_choices(inst, order, cheapest)
        reference = max(abs(objective(inst, greedy)), 1.0)
        price = fairness_price_w(inst)
        best_value = sum(inst.values)

        share = {c: inst.cost(0, c) for c in usage}  # a job's share of its choice's cost
        values = inst.values
        # The objective can be negative (surplus value, fairness term): energy is measured from
        # a lower bound of it, so that it is never negative and the fitness orders decisions
        # by the objective.
        floor = sum(min([0.0] + [share[c] for c in row]) for row in genes)
        if price > 0:
            sizes = tenant_sizes(inst)
            best = dict.fromkeys(sizes, 0.0)
            for j, row in enumerate(genes):
                best[inst.jobs[j].tenant] += (
                    max([0.0] + [job_rate(inst, j, c) for c in row]) / sizes[inst.jobs[j].tenant]
                )
            floor -= price * min(best.values())

        def fitness(choices: list[Choice]) -> float:
            cost = admitted = 0.0
            for j, c in enumerate(choices):
                if c is not None:
                    cost += share[c]
                    admitted += values[j]
            if price > 0:
                cost -= price * least_share(inst, choices)
            energy = (cost - floor) / reference
            violation = best_value - admitted
            return 1.0 / (1.0 + POWER_WEIGHT * energy + LATENCY_WEIGHT * violation)

        cost_of = inst.choice_cost

        def insert(state: _State, j: int) -> bool:
            """Admit waiting job j into free capacity: cheapest option or new group that fits,
            or joining partners that run on one GPU of the group's type."""
            best = None
            for i in opts[j]:
                if state.fits(("o", i)):
                    best = ("o", i)
                    break
            for p in inst.job_groups[j]:
                group = inst.groups[p]
                others = group.partners_of(j)
                if all(state.choices[x] is None for x in others):
                    cheaper = best is None or group.cost < cost_of(best) + sum(min_cost[x] for x in others)
                    if state.fits(("g", p)) and cheaper:
                        best = ("g", p)
                elif inst.joined(state.choices, j, p):
                    for x in others:
                        state.drop(x)
                    state.take(j, ("g", p))
                    return True
            if best is None:
                return False
            state.take(j, best)
            return True

        def relocate(state: _State, w: int, t: str, onto: set | None = None) -> bool:
            """Move running job w (and its partners, when it shares) off GPU type t, onto their
            configurations elsewhere (only types in `onto`, if given) that fit, the roomiest
            type first; False (nothing changed) when they do not fit."""
            held = state.choices[w]
            moved = state.drop(w)
            if held[0] == "g":  # the same jobs sharing a GPU of another type
                for p in siblings[held[1]]:
                    u = inst.groups[p].gpu_type
                    if u != t and (onto is None or u in onto) and state.fits(("g", p)):
                        state.take(w, ("g", p))
                        return True
            placed = []
            for x in moved:  # the roomiest other type first: it is the least contested
                for i in sorted(
                    opts[x], key=lambda i: (-state.ledger.free.get((inst.all_options[i].gpu_type, 1), 0), i)
                ):
                    u = inst.all_options[i].gpu_type
                    if u != t and (onto is None or u in onto) and state.fits(("o", i)):
                        state.take(x, ("o", i))
                        placed.append(x)
                        break
                else:
                    for x2 in placed:
                        state.drop(x2)
                    state.take(w, held)
                    return False
            return True

        def evict(state: _State, j: int) -> list[int]:
            """Admit job j by evicting the least valuable running jobs of lower priority levels
            (not of its own: trading one job for another of the level for a fairness bonus
            would cost room that more jobs could use) on a GPU type of one of its
            configurations, if together they are worth less than j; the evicted."""
            value = inst.values[j]
            level = inst.jobs[j].priority
            free_groups = [
                ("g", p) for p in inst.job_groups[j]
                if all(state.choices[x] is None for x in inst.groups[p].partners_of(j))
            ]
            for choice in [("o", i) for i in opts[j]] + free_groups:
                t = inst.type_of(choice)
                victims = []
                for w in cheapest_first.get(t, ()):
                    if inst.values[w] >= value:
                        break
                    if state.choices[w] is not None and inst.jobs[w].priority < level:
                        victims.append(w)
                if not victims:
                    continue
                removed, lost = [], 0.0
                snapshot = list(state.choices), dict(state.ledger.free)
                for w in victims:
                    if state.fits(choice):
                        break
                    if state.choices[w] is None:
                        continue
                    released = state.drop(w)
                    removed += released
                    lost += sum(inst.values[x] for x in released)
                if state.fits(choice) and lost < sum(inst.values[x] for x in inst.jobs_of(choice)):
                    state.take(j, choice)
                    return removed
                state.choices, state.ledger.free = snapshot
            return []

        def repair(choices: list[Choice] | _State, deep: bool) -> list[Choice]:
            state = choices if isinstance(choices, _State) else _State(inst, choices, usage)
            waiting = [j for j in placeable if state.choices[j] is None]
            if deep:
                offload(state, waiting)
            k = 0
            while k < len(waiting):
                j = waiting[k]
                k += 1
                if state.choices[j] is not None or insert(state, j):
                    continue
                if deep:
                    evicted = evict(state, j)
                    if evicted:
                        waiting = waiting[:k] + sorted(set(waiting[k:]) | set(evicted), key=rank.get)
            if deep:
                swap(state)
            return state.choices

        def exchange(state: _State, choice: Choice, t: str, k: int, tried: set) -> bool:
            """Room for `choice` (on type u) by moving up to k single-GPU jobs from u onto
            type t, where k GPUs were just released; False (nothing changed) if that fails."""
            u = inst.type_of(choice)
            key = (usage[choice], t, k, tuple(sorted(state.ledger.free.items())))
            if u == t or key in tried:
                return False
            snapshot = list(state.choices), dict(state.ledger.free)
            moved = 0
            for v in singles.get((u, t), ()):
                held = state.choices[v]
                if held is None or held[0] != "o" or inst.all_options[held[1]].gpu_type != u:
                    continue
                target = next((("o", i) for i in opts[v] if inst.all_options[i].gpu_type == t
                               and inst.all_options[i].num_gpus == 1 and state.fits(("o", i))), None)
                if target is None:
                    continue
                state.drop(v)
                state.take(v, target)
                moved += 1
                if state.fits(choice):
                    return True
                if moved >= k:
                    break
            for p, q in group_moves.get((u, t), ()) if moved < k else ():  # the same group on type t
                first = inst.groups[p].members[0]
                if state.choices[first] != ("g", p) or not state.fits(("g", q)):
                    continue
                state.drop(first)
                state.take(first, ("g", q))
                moved += 1
                if state.fits(choice):
                    return True
                if moved >= k:
                    break
            state.choices, state.ledger.free = snapshot
            tried.add(key)
            return False

        def offload(state: _State, waiting: list[int]) -> None:
            """Make room for waiting jobs: running multi-GPU jobs (least valuable first) shrink
            to a configuration on fewer GPUs where one fits; then the GPU types no waiting
            job can use are flooded with running jobs from the types the waiting jobs need.
            The power descent afterwards moves back whoever still fits where it was cheaper."""
            waiting = [j for j in waiting if not insert(state, j)]
            if not waiting:
                return
            tried: set = set()
            for w in reversed(order):  # shrink: the same job on fewer GPUs (of another type)
                held = state.choices[w]
                if held is None or held[0] != "o" or inst.all_options[held[1]].num_gpus == 1:
                    continue
                k = inst.all_options[held[1]].num_gpus
                t = inst.all_options[held[1]].gpu_type
                state.drop(w)
                for i in opts[w]:
                    opt = inst.all_options[i]
                    if opt.num_gpus < k and (state.fits(("o", i)) or exchange(state, ("o", i), t, k, tried)):
                        state.take(w, ("o", i))
                        break
                else:
                    state.take(w, held)
            waiting = [j for j in waiting if not insert(state, j)]
            if not waiting:
                return
            needed = set().union(*(types_of[j] for j in waiting))
            spare = {t for t in inst.capacity if t not in needed and state.ledger.free.get((t, 1), 0) > 0}
            if not spare:
                return
            for w in reversed(order):
                held = state.choices[w]
                if held is None or inst.type_of(held) not in needed or not (types_of[w] & spare):
                    continue
                relocate(state, w, inst.type_of(held), spare)

        def swap(state: _State) -> None:
            """One out, more in: a running job whose GPUs admit waiting jobs worth more than it
            (two jobs of its level on two GPUs each instead of it on four), or admit some and
            it then finds room elsewhere."""
            waiting = [j for j in placeable if state.choices[j] is None]
            if not waiting:
                return
            top = max(inst.jobs[j].priority for j in waiting)
            tried: set = set()  # (freed GPUs, value) that admitted nothing better since the last swap
            for w in reversed(order):
                held = state.choices[w]
                if held is None or held[0] != "o" or inst.jobs[w].priority > top:
                    continue
                if (usage[held], inst.values[w]) in tried:
                    continue
                snapshot = list(state.choices), dict(state.ledger.free)
                state.drop(w)
                t = inst.all_options[held[1]].gpu_type
                gained = sum(inst.values[j] for j in waiting
                             if j != w and state.choices[j] is None and t in types_of[j] and insert(state, j))
                if gained > 0 and insert(state, w):
                    gained += inst.values[w]  # it found room elsewhere
                if gained > inst.values[w] + 1e-9:
                    waiting = sorted(
                        [j for j in waiting if state.choices[j] is None] + [w] * (state.choices[w] is None),
                        key=rank.get,
                    )
                    tried.clear()
                else:
                    state.choices, state.ledger.free = snapshot
                    tried.add((usage[held], inst.values[w]))

        def descend(choices: list[Choice]) -> list[Choice]:
            """Power local search at unchanged admission."""
            state = _State(inst, choices, usage)
            for j in order:
                held = state.choices[j]
                if held is None:
                    continue
                if held[0] == "o":
                    for p in inst.job_groups[j]:  # partners alone (or a smaller group) -> one shared GPU
                        group = inst.groups[p]
                        others = inst.held_by_partners(state.choices, j, p)
                        if others is None or group.cost >= cost_of(held) + sum(cost_of(c) for _, c in others) - 1e-9:
                            continue
                        state.drop(j)
                        for x, _ in others:
                            state.drop(x)
                        if state.fits(("g", p)):
                            state.take(j, ("g", p))
                            break
                        state.take(j, held)
                        for x, c in others:
                            state.take(x, c)
                    if state.choices[j] != held:
                        continue
                    state.drop(j)
                    for i in opts[j]:
                        if inst.all_options[i].cost < cost_of(held) - 1e-9 and state.fits(("o", i)):
                            state.take(j, ("o", i))
                            break
                    else:
                        state.take(j, held)
            return state.choices

        min_cost = [cost_of(("o", opts[j][0])) if opts[j] else 0.0 for j in range(n_jobs)]

        def decode(genome: list[Choice]) -> list[Choice]:
            state = _State(inst, [None] * len(genome), usage)
            out = state.choices
            for j in order:
                if out[j] is not None:
                    continue
                want = genome[j]
                if want is not None and want[0] == "g":
                    others = inst.groups[want[1]].partners_of(j)
                    if all(genome[x] == want and out[x] is None for x in others) and state.fits(want):
                        state.take(j, want)
                        continue
                    want = None
                if want is not None and state.fits(want):
                    state.take(j, want)
                    continue
                for i in opts[j]:
                    if state.fits(("o", i)):
                        state.take(j, ("o", i))
                        break
            return repair(state, deep=False)

        def mutate(genome: list[Choice], rate: float) -> list[Choice]:
            child = list(genome)
            for j in mutable:
                if rng.random() < rate:
                    gene = rng.choice(genes[j])
                    for x in (inst.jobs_of(gene) if gene[0] == "g" else (j,)):
                        child[x] = gene
            return child

        population_size = max(ELITE + 1, settings.genetic_population)
        budget = min(
            settings.genetic_generations, max(MIN_GENERATIONS, WORK_BUDGET // max(1, population_size * n_jobs))
        )
        rate = min(0.5, 3.0 / max(1, len(mutable)))
        def polish(choices: list[Choice]) -> list[Choice]:
            """Deep repair and power descent, again while the admitted value grows."""
            for _ in range(POLISH_ROUNDS):
                before = admitted_value(inst, choices)
                choices = descend(repair(choices, deep=True))
                if admitted_value(inst, choices) <= before + 1e-9:
                    break
            return choices

        full = full_levels(inst, greedy)
        rounded = rounded_choices(inst, deadline, full)
        seeds = [polish(greedy)] + ([polish(rounded)] if rounded else [polish(group_first_choices(inst, order))])
        population = seeds + [decode(mutate(seeds[k % len(seeds)], rate)) for k in range(population_size - len(seeds))]
        scored = sorted(((fitness(g), k, g) for k, g in enumerate(population)), reverse=True)
        generations = 0
        counter = len(population)
        timed_out = False
        while generations < budget and mutable:
            if cpu_now() >= deadline:
                timed_out = True
                break
            generations += 1
            nxt = [g for _, _, g in scored[:ELITE]]
            while len(nxt) < population_size:
                a, b = (max(rng.sample(scored, min(TOURNAMENT, len(scored))))[2] for _ in range(2))
                child = [a[j] if rng.random() < 0.5 else b[j] for j in range(len(a))]
                nxt.append(decode(mutate(child, rate)))
            scored = []
            for g in nxt:
                counter += 1
                scored.append((fitness(g), counter, g))
            scored.sort(reverse=True)
        best = polish(scored[0][2])
        if fitness(best) < scored[0][0]:
            best = scored[0][2]
        notes = [f"{generations} generations of {budget}"]
        if rounded is None and not set(level_maxima(inst)) <= full:
            notes.append(NO_RELAXATION)
        if timed_out:
            notes.append(
                "Stopped at the time limit before the generation budget (the answer may depend on the machine's speed)."
            )
        return Outcome(best, status="feasible", notes=notes)
