"""The genetic algorithm's fitness: 1 / (1 + power_weight * energy + latency_weight *
slo_violation), with energy the decision's cost above a lower bound of any decision's,
relative to the greedy decision's, and slo_violation the admission value left out (in units of
one lowest-priority job; admission.py). With LATENCY_WEIGHT 10^4 one job left out outweighs any
power saving, so admission comes first. With a fairness weight the cost includes the ILP's
fairness term (minus lambda times the least-served tenant's share, fairness.py). A decision that
moves a kept job (admission_keeps.py) counts, on top, the value of every job of a lower level
and one more, as the ILP's admission programs do: no number of lower-level jobs admitted pays
for the move."""
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .admission_keeps import kept
from .choices import Choice
from .fairness import fairness_price_w, least_share, rate as job_rate, tenant_sizes
from .genetic_table import GeneticTable
from .ilp_model import objective

POWER_WEIGHT = 1.0
LATENCY_WEIGHT = 1e4


@dataclass(frozen=True)
class Fitness:
    table: GeneticTable
    share: Mapping[Choice, float]  # choice -> a job's share of its cost
    floor: float  # a lower bound of any decision's cost (energy is measured from it: never negative)
    reference: float  # the greedy decision's cost (at least 1): energy's unit
    price: float  # the fairness term's lambda (0: off)
    best_value: float  # the admission value of admitting every job
    # kept job -> (the choices that keep it where it runs, what any other choice counts as left out)
    moves: Mapping[int, tuple[frozenset[Choice], float]]

    def __call__(self, choices: list[Choice]) -> float:
        inst, share, values = self.table.inst, self.share, self.table.inst.values
        cost = admitted = 0.0
        for j, c in enumerate(choices):
            if c is not None:
                cost += share[c]
                admitted += values[j]
        if self.price > 0:
            cost -= self.price * least_share(inst, choices)
        energy = (cost - self.floor) / self.reference
        violation = self.best_value - admitted
        for j, (stays, price) in self.moves.items():
            if choices[j] is not None and choices[j] not in stays:
                violation += price
        return 1.0 / (1.0 + POWER_WEIGHT * energy + LATENCY_WEIGHT * violation)


def fitness_for(table: GeneticTable, greedy: list[Choice]) -> Fitness:
    """The fitness of this instance, energy in units of the greedy decision's objective."""
    inst = table.inst
    price = fairness_price_w(inst)
    share = {c: inst.cost(0, c) for c in table.usage}
    return Fitness(
        table=table,
        share=MappingProxyType(share),
        floor=cost_floor(table, share, price),
        reference=max(abs(objective(inst, greedy)), 1.0),
        price=price,
        best_value=sum(inst.values),
        moves=MappingProxyType(kept_moves(inst)),
    )


def kept_moves(inst) -> dict[int, tuple[frozenset[Choice], float]]:
    """Each kept job's staying choices and the price of any other: the admission value of all
    jobs of lower levels, plus one."""
    out = {}
    for j, stays in kept(inst).items():
        below = sum(v for job, v in zip(inst.jobs, inst.values, strict=True) if job.priority < inst.jobs[j].priority)
        out[j] = (frozenset(stays), 1.0 + below)
    return out


def cost_floor(table: GeneticTable, share: dict, price: float) -> float:
    """A lower bound of the objective (which can be negative: surplus value, fairness term):
    every job at its cheapest gene or waiting, and the fairness term at every tenant's best."""
    inst = table.inst
    floor = sum(min([0.0] + [share[c] for c in row]) for row in table.genes)
    if price > 0:
        sizes = tenant_sizes(inst)
        best = dict.fromkeys(sizes, 0.0)
        for j, row in enumerate(table.genes):
            best[inst.jobs[j].tenant] += max([0.0] + [job_rate(inst, j, c) for c in row]) / sizes[inst.jobs[j].tenant]
        floor -= price * min(best.values())
    return floor
