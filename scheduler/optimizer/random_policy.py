"""`random` baseline: each job, in random order, gets a random known configuration within
D_j that fits (seeded: the same seed gives the same plan)."""
import random

from .base import Outcome, Solver
from .capacity import CapacityLedger
from .choices import Choice
from .instance import Instance


class RandomPolicy(Solver):
    name = "random"
    optimising = False

    def decide(self, inst: Instance) -> Outcome:
        rng = random.Random(inst.problem.settings.seed)
        ledger = CapacityLedger(inst)
        choices: list[Choice] = [None] * len(inst.jobs)
        order = list(range(len(inst.jobs)))
        rng.shuffle(order)
        for j in order:
            options = list(inst.job_all_options[j])
            rng.shuffle(options)
            for i in options:
                if ledger.fits(("o", i)):
                    choices[j] = ("o", i)
                    ledger.take(choices[j])
                    break
        return Outcome(choices)
