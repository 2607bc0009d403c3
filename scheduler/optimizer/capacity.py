"""Running capacity bookkeeping for solvers that build a decision job by job."""
from .choices import Choice
from .instance import Instance


class CapacityLedger:
    def __init__(self, inst: Instance):
        self.inst = inst
        self.free = inst.free()

    def fits(self, choice: Choice) -> bool:
        return all(self.free.get((t, s), 0) >= n for t, s, n in self.inst.usage(choice))

    def take(self, choice: Choice) -> None:
        for t, s, n in self.inst.usage(choice):
            self.free[(t, s)] -= n

    def give(self, choice: Choice) -> None:
        for t, s, n in self.inst.usage(choice):
            self.free[(t, s)] += n


def is_feasible(inst: Instance, choices: list[Choice]) -> bool:
    """Capacity respected and every group chosen by all of its jobs (and by nothing else)."""
    ledger = CapacityLedger(inst)
    for j, choice in enumerate(choices):
        if choice is None:
            continue
        if choice[0] == "g":
            group = inst.groups[choice[1]]
            if any(choices[x] != choice for x in group.members):
                return False
            if j != group.members[0]:
                continue  # the GPU is counted once, for the group's first job
        ledger.take(choice)
    return all(n >= 0 for n in ledger.free.values())
