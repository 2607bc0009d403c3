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
feasible; mutation redraws a few genes. The operators are named functions on a frozen table
of the instance built once per solve: genetic_table.py (the table, and the decision a repair
changes), genetic_fitness.py, genetic_admit.py (insert, evict), genetic_room.py (shrink,
exchange, relocate), genetic_repair.py (repair, swap), genetic_operators.py (decode, mutate,
crossover, select, descend, polish); this module runs the generations.
The first population holds the greedy decision and the rounded LP relaxation of admission
(relaxation.py: HiGHS on the continuous admission program, no integer search; without it the
greedy-seeded search admitted 26 jobs fewer than the ILP at 6144 GPUs), or the group-first
decision (greedy.group_first_choices) where the relaxation is unavailable, each repaired, and
mutants of them; the elite is kept, so the answer is never worse by the fitness than either.

Stop criterion: a generation budget, so that the same seed gives the same plan on any
machine: settings.genetic_generations, lowered for large instances so that the work
(population x generations x jobs) stays below WORK_BUDGET gene decodes. The round's time limit
remains a safety net only, counted in CPU seconds (cpu_clock.py): a run that reaches it stops
early and says so in its notes (its answer may then depend on the machine's speed), and so
does a run whose relaxation had no time left. The elite is kept, so the answer admits at
least what its best seed admits (one job left out outweighs any power saving).
"""
import random

from .base import Outcome, Solver
from .cpu_clock import cpu_now
from .genetic_fitness import Fitness, fitness_for
from .genetic_operators import crossover, decode, mutate, polish, select
from .genetic_table import GeneticTable, build_table
from .greedy import cheapest, greedy_choices, group_first_choices
from .ilp_model import level_maxima
from .instance import Instance
from .relaxation import full_levels, rounded_choices

ELITE = 2
WORK_BUDGET = 100_000  # gene decodes (population x generations x jobs) per run, at most
MIN_GENERATIONS = 1
NO_RELAXATION = (
    "The LP relaxation of admission was unavailable (no time left, or HiGHS failed): the first population held "
    "the greedy and group-first decisions only, which may admit fewer jobs."
)
TIMED_OUT = "Stopped at the time limit before the generation budget (the answer may depend on the machine's speed)."


class GeneticSolver(Solver):
    name = "genetic"
    keeps_running_work = True

    def decide(self, inst: Instance) -> Outcome:
        settings = inst.problem.settings
        rng = random.Random(settings.seed)
        deadline = cpu_now() + settings.time_limit_s
        table = build_table(inst)
        greedy = greedy_choices(inst, list(table.order), cheapest)
        fitness = fitness_for(table, greedy)
        population_size = max(ELITE + 1, settings.genetic_population)
        budget = generation_budget(settings.genetic_generations, population_size, len(inst.jobs))
        rate = mutation_rate(table)
        full = full_levels(inst, greedy)
        rounded = rounded_choices(inst, deadline, full)
        seeds = [polish(table, greedy)] + (
            [polish(table, rounded)] if rounded else [polish(table, group_first_choices(inst, list(table.order)))]
        )
        population = seeds + [decode(table, mutate(table, rng, seeds[k % len(seeds)], rate))
                              for k in range(population_size - len(seeds))]
        scored, generations, timed_out = evolve(table, rng, fitness, population, budget, rate, deadline)
        best = polish(table, scored[0][2])
        if fitness(best) < scored[0][0]:
            best = scored[0][2]
        notes = [f"{generations} generations of {budget}"]
        if rounded is None and not set(level_maxima(inst)) <= full:
            notes.append(NO_RELAXATION)
        if timed_out:
            notes.append(TIMED_OUT)
        return Outcome(best, status="feasible", notes=notes)


def generation_budget(generations: int, population_size: int, n_jobs: int) -> int:
    """settings.genetic_generations, lowered so that population x generations x jobs stays
    below WORK_BUDGET gene decodes (at least MIN_GENERATIONS)."""
    return min(generations, max(MIN_GENERATIONS, WORK_BUDGET // max(1, population_size * n_jobs)))


def mutation_rate(table: GeneticTable) -> float:
    """About three genes redrawn per mutation, at most half of them."""
    return min(0.5, 3.0 / max(1, len(table.mutable)))


def evolve(table: GeneticTable, rng: random.Random, fitness: Fitness, population: list, budget: int, rate: float,
           deadline: float) -> tuple[list, int, bool]:
    """(the last generation as (fitness, tie-break, genome), fittest first; generations run;
    whether the time limit stopped it). The ELITE fittest pass unchanged; every other child is
    two tournament winners crossed, mutated and decoded."""
    scored = sorted(((fitness(g), k, g) for k, g in enumerate(population)), reverse=True)
    size = len(population)
    generations, counter = 0, len(population)
    while generations < budget and table.mutable:
        if cpu_now() >= deadline:
            return scored, generations, True
        generations += 1
        nxt = [g for _, _, g in scored[:ELITE]]
        while len(nxt) < size:
            a, b = (select(rng, scored) for _ in range(2))
            nxt.append(decode(table, mutate(table, rng, crossover(rng, a, b), rate)))
        scored = []
        for g in nxt:
            counter += 1
            scored.append((fitness(g), counter, g))
        scored.sort(reverse=True)
    return scored, generations, False
