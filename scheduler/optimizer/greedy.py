"""The greedy engine shared by the greedy policies and the ILP's fallback: jobs in admission
order, each takes the first option (in the policy's ranking) that still fits, or shares a GPU
with its co-location candidates, joining the partners' GPU where they already run (alone on
one GPU of the group's type, or as a smaller group of the same chain), when that is cheaper.
A placed job keeps its current configuration (option, or running group, together) when its
GPU type has room at its turn: a greedy fill makes no move for a saving (the ILP and the
genetic algorithm weigh those against what they throw away, keep_work.py), and its ILP fallback
would otherwise tear running groups apart and preempt their jobs. Capacity placed jobs hold is
reserved for them until their turn, so a job of a higher priority displaces one only where
nothing else fits."""
from collections.abc import Callable

from .capacity import CapacityLedger
from .choices import Choice, Option
from .instance import Instance


def greedy_choices(
    inst: Instance,
    order: list[int],
    rank: Callable[[Option], float],
    *,
    slo_only: bool = True,
    use_groups: bool = True,
    start: list[Choice] | None = None,
) -> list[Choice]:
    """The greedy decision; with `start`, a feasible decision that it completes: the start's
    jobs keep their choices and hold their capacity, the others fill what is left."""
    choices: list[Choice] = list(start) if start is not None else [None] * len(inst.jobs)
    ledger = CapacityLedger(inst)
    spare = _Spare(inst, order, slo_only, use_groups, choices)
    for choice in {c for c in choices if c is not None}:
        ledger.take(choice)
    for j in order:
        if choices[j] is not None:
            continue  # kept its running group with an earlier member
        spare.release(j)
        current = spare.current[j]
        if current is not None and ledger.fits(current) and all(choices[x] is None for x in inst.jobs_of(current)):
            # placed jobs stay (see the module's text)
            ledger.take(current)
            spare.take(current)
            for x in inst.jobs_of(current):
                choices[x] = current
            continue
        candidates = inst.job_options[j] if slo_only else inst.job_all_options[j]
        best, best_cost = None, float("inf")
        ranked = sorted(candidates, key=lambda i: (rank(inst.all_options[i]), i))
        for i in [i for i in ranked if spare.fits(("o", i))] + ranked:
            if ledger.fits(("o", i)):
                best, best_cost = ("o", i), inst.all_options[i].cost
                break
        if use_groups:
            for p in inst.job_groups[j]:
                held = inst.joined(choices, j, p)
                if not held:
                    continue
                delta = inst.groups[p].cost - sum(inst.choice_cost(c) for c in held)  # a partner's GPU is reused
                if delta < best_cost:
                    best, best_cost = ("g", p), delta
        if best is None:
            continue
        if best[0] == "g":
            for c in inst.joined(choices, j, best[1])[1:]:  # the partners' other GPUs are freed
                ledger.give(c)
                spare.give(c)
            for x in inst.groups[best[1]].members:
                choices[x] = best
        else:
            ledger.take(best)
            spare.take(best)
            choices[j] = best
    return choices


class _Spare(CapacityLedger):
    """Capacity free of what placed jobs hold now (their current option or running group) until
    their turn: a job that has no current choice, or lost it, takes a configuration from the
    spare capacity where one fits, and displaces a placed job of a later turn only where none
    does (a higher priority preempts only what it must). Without placed jobs it is the ledger."""

    def __init__(self, inst: Instance, order: list[int], slo_only: bool, use_groups: bool, chosen: list[Choice]):
        super().__init__(inst)
        self.current: list[Choice] = [inst.current_choice(j, slo_only, use_groups) for j in range(len(inst.jobs))]
        self.reserved: set = set()
        taken = {c for c in chosen if c is not None}
        for choice in taken:
            self.take(choice)
        for j in order:
            if chosen[j] is None and self.current[j] is not None and self.current[j] not in self.reserved | taken:
                self.reserved.add(self.current[j])
                self.take(self.current[j])

    def release(self, j: int) -> None:
        """Job j's turn: what it holds now is no longer reserved (it takes it, or frees it)."""
        if self.current[j] in self.reserved:
            self.reserved.discard(self.current[j])
            self.give(self.current[j])


def cheapest(opt: Option) -> float:
    """Rank for minimum power (objective cost)."""
    return opt.cost


def group_first_choices(inst: Instance, order: list[int]) -> list[Choice]:
    """Admission order, but a job whose co-location partners all still wait shares one new
    GPU with them (the group cheapest per job that fits) before it considers running alone:
    fewer GPUs per job, so more jobs fit. A second starting point for the genetic algorithm."""
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    for j in order:
        if choices[j] is not None:
            continue  # admitted earlier as a partner
        groups = inst.groups
        shared = [
            ("g", p) for p in sorted(inst.job_groups[j], key=lambda p: (groups[p].cost / len(groups[p].members), p))
            if all(choices[x] is None for x in groups[p].members)
        ]
        alone = [("o", i) for i in sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i))]
        choice = next((c for c in shared + alone if ledger.fits(c)), None)
        if choice is None:
            continue
        ledger.take(choice)
        for x in inst.jobs_of(choice):
            choices[x] = choice
    return choices
