"""The greedy engine shared by the greedy policies and the ILP's fallback: jobs in admission
order, each takes the first option (in the policy's ranking) that still fits, or shares a GPU
with its co-location candidates, joining the partners' GPU where they already run (alone on
one GPU of the group's type, or as a smaller group of the same chain), when that is cheaper.
A group running now stays together when its GPU type has room: its first member in admission
order would otherwise take an option alone (never its current configuration), and the
ILP's fallback would tear running groups apart and preempt their jobs."""
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
) -> list[Choice]:
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    for j in order:
        if choices[j] is not None:
            continue  # kept its running group with an earlier member
        running = next((("g", p) for p in inst.job_groups[j] if inst.groups[p].current), None) if use_groups else None
        if running is not None and ledger.fits(running) and all(choices[x] is None for x in inst.jobs_of(running)):
            # running groups stay together (see the module's text)
            ledger.take(running)
            for x in inst.jobs_of(running):
                choices[x] = running
            continue
        candidates = inst.job_options[j] if slo_only else inst.job_all_options[j]
        best, best_cost = None, float("inf")
        for i in sorted(candidates, key=lambda i: (rank(inst.all_options[i]), i)):
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
            for x in inst.groups[best[1]].members:
                choices[x] = best
        else:
            ledger.take(best)
            choices[j] = best
    return choices


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
