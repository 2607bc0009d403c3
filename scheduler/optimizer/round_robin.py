"""`round_robin` baseline: GPU types in turn, ignoring power. Each job gets the next type in
the rotation that has room, with the fewest GPUs there that meet its T_min (or all D_j of
them when none do), alone."""
from .base import Outcome, Solver
from .capacity import CapacityLedger
from .choices import Choice
from .instance import Instance


def _preference(inst: Instance):
    def key(i: int):
        opt = inst.all_options[i]
        # meeting T_min with the fewest GPUs first; else the most GPUs it may have
        return (not opt.meets_slo, opt.num_gpus if opt.meets_slo else -opt.num_gpus, not opt.consolidated)

    return key


class RoundRobin(Solver):
    name = "round_robin"
    optimising = False

    def decide(self, inst: Instance) -> Outcome:
        types = sorted(inst.capacity)
        ledger = CapacityLedger(inst)
        choices: list[Choice] = [None] * len(inst.jobs)
        turn = 0
        for j in inst.admission_order():
            for step in range(len(types)):
                gpu_type = types[(turn + step) % len(types)]
                here = sorted(
                    (i for i in inst.job_all_options[j] if inst.all_options[i].gpu_type == gpu_type),
                    key=_preference(inst),
                )
                fitting = [i for i in here if ledger.fits(("o", i))]
                if fitting:
                    choices[j] = ("o", fitting[0])
                    ledger.take(choices[j])
                    turn = (turn + step + 1) % len(types)
                    break
        return Outcome(choices)
