"""`greedy`: admission order, cheapest configuration (in power) that meets T_min, partners
where sharing is cheaper. The ILP falls back to it, so the cluster always gets a decision."""
from .base import Outcome, Solver
from .greedy import cheapest, greedy_choices
from .instance import Instance


class GreedyPower(Solver):
    name = "greedy"

    def decide(self, inst: Instance) -> Outcome:
        return Outcome(greedy_choices(inst, inst.admission_order(), cheapest))
