"""`greedy_efficient` baseline: each job, by priority, takes the configuration meeting T_min
with the most throughput per watt, sharing a GPU where that is cheaper."""
from .base import Outcome, Solver
from .choices import Option
from .greedy import greedy_choices
from .instance import Instance


def per_watt(opt: Option) -> float:
    return -opt.tau / opt.power_w if opt.power_w > 0 else -float("inf")


class GreedyEfficient(Solver):
    name = "greedy_efficient"

    def decide(self, inst: Instance) -> Outcome:
        return Outcome(greedy_choices(inst, inst.admission_order(), per_watt))
