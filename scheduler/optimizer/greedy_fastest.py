"""`greedy_fastest` baseline (heterogeneity-aware, maximum throughput): each job, by
priority, takes the fastest configuration within D_j that fits, alone, whatever it draws."""
from .base import Outcome, Solver
from .greedy import greedy_choices
from .instance import Instance


class GreedyFastest(Solver):
    name = "greedy_fastest"
    optimising = False

    def decide(self, inst: Instance) -> Outcome:
        order = inst.admission_order()
        return Outcome(greedy_choices(inst, order, lambda o: -o.tau, slo_only=False, use_groups=False))
