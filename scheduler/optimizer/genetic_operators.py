"""The genetic algorithm's operators on one gene per job (its option, its co-location group,
or None): decode a genome into a feasible decision, mutate, crossover, tournament selection,
and the power local search (descend) and polish that the seeds and the answer get.

Every operator that draws takes the run's one random.Random, in a fixed order, so the same
seed gives the same answer."""
import random

from .choices import Choice
from .genetic_repair import repair
from .genetic_table import GeneticTable, State
from .ilp_model import admitted_value

TOURNAMENT = 3
POLISH_ROUNDS = 3  # deep repair + descent rounds, at most, on the seeds and the answer


def decode(table: GeneticTable, genome: list[Choice]) -> list[Choice]:
    """Genes in admission order against the capacity ledger; a gene that does not fit, or a
    group its partners did not all choose, is replaced by the job's cheapest fitting option;
    then the jobs left out are repaired in (not deep)."""
    inst = table.inst
    state = State(table, [None] * len(genome))
    out = state.choices
    for j in table.order:
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
        for i in table.opts[j]:
            if state.fits(("o", i)):
                state.take(j, ("o", i))
                break
    return repair(table, state, deep=False)


def mutate(table: GeneticTable, rng: random.Random, genome: list[Choice], rate: float) -> list[Choice]:
    """Each mutable gene is redrawn with probability `rate` (a group's gene for all its jobs)."""
    child = list(genome)
    for j in table.mutable:
        if rng.random() < rate:
            gene = rng.choice(table.genes[j])
            for x in (table.inst.jobs_of(gene) if gene[0] == "g" else (j,)):
                child[x] = gene
    return child


def crossover(rng: random.Random, a: list[Choice], b: list[Choice]) -> list[Choice]:
    """Uniform: each gene from either parent (decode and repair make the child feasible)."""
    return [a[j] if rng.random() < 0.5 else b[j] for j in range(len(a))]


def select(rng: random.Random, scored: list[tuple[float, int, list[Choice]]]) -> list[Choice]:
    """Tournament: the fittest of TOURNAMENT (fitness, tie-break, genome) drawn at random."""
    return max(rng.sample(scored, min(TOURNAMENT, len(scored))))[2]


def descend(table: GeneticTable, choices: list[Choice]) -> list[Choice]:
    """Power local search at unchanged admission: co-location partners running alone (or as a
    smaller group) share one GPU where that is cheaper, and each placed job moves to a cheaper
    configuration that fits."""
    inst = table.inst
    state = State(table, choices)
    for j in table.order:
        held = state.choices[j]
        if held is None or held[0] != "o":
            continue
        for p in inst.job_groups[j]:
            if _join(table, state, j, held, p):
                break
        if state.choices[j] != held:
            continue
        state.drop(j)
        for i in table.opts[j]:
            if inst.all_options[i].cost < inst.choice_cost(held) - 1e-9 and state.fits(("o", i)):
                state.take(j, ("o", i))
                break
        else:
            state.take(j, held)
    return state.choices


def _join(table: GeneticTable, state: State, j: int, held: Choice, p: int) -> bool:
    """Job j (alone, on `held`) and its partners in group p share one GPU of the group where
    that is cheaper than what they hold and it fits; False (nothing changed) otherwise."""
    inst = table.inst
    others = inst.held_by_partners(state.choices, j, p)
    if others is None:
        return False
    if inst.groups[p].cost >= inst.choice_cost(held) + sum(inst.choice_cost(c) for _, c in others) - 1e-9:
        return False
    state.drop(j)
    for x, _ in others:
        state.drop(x)
    if state.fits(("g", p)):
        state.take(j, ("g", p))
        return True
    state.take(j, held)
    for x, c in others:
        state.take(x, c)
    return False


def polish(table: GeneticTable, choices: list[Choice]) -> list[Choice]:
    """Deep repair and power descent, again while the admitted value grows."""
    for _ in range(POLISH_ROUNDS):
        before = admitted_value(table.inst, choices)
        choices = descend(table, repair(table, choices, deep=True))
        if admitted_value(table.inst, choices) <= before + 1e-9:
            break
    return choices
