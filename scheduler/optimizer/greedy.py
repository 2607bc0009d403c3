"""The greedy engine shared by the greedy policies and the ILP's fallback: jobs in admission
order, each takes the first option (in the policy's ranking) that still fits, or shares a GPU
with its co-location candidate, joining the partner's GPU where the partner already runs
alone, when that is cheaper."""
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
    use_pairs: bool = True,
) -> list[Choice]:
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    for j in order:
        candidates = inst.job_options[j] if slo_only else inst.job_all_options[j]
        best, best_cost = None, float("inf")
        for i in sorted(candidates, key=lambda i: (rank(inst.all_options[i]), i)):
            if ledger.fits(("o", i)):
                best, best_cost = ("o", i), inst.all_options[i].cost
                break
        if use_pairs:
            for p in inst.job_pairs[j]:
                pair = inst.pairs[p]
                other = choices[pair.partner_of(j)]
                if other is None or other[0] != "o":
                    continue
                held = inst.all_options[other[1]]
                if held.num_gpus != 1 or held.gpu_type != pair.gpu_type:
                    continue
                delta = pair.cost - held.cost  # the partner's GPU is reused: no capacity needed
                if delta < best_cost:
                    best, best_cost = ("p", p), delta
        if best is None:
            continue
        if best[0] == "p":
            choices[inst.pairs[best[1]].partner_of(j)] = best
        else:
            ledger.take(best)
        choices[j] = best
    return choices


def cheapest(opt: Option) -> float:
    """Rank for minimum power (objective cost)."""
    return opt.cost


def pair_first_choices(inst: Instance, order: list[int]) -> list[Choice]:
    """Admission order, but a job whose co-location partner still waits shares one new GPU
    with it (cheapest such GPU that fits) before it considers running alone: fewer GPUs per
    job, so more jobs fit. A second starting point for the genetic algorithm."""
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    for j in order:
        if choices[j] is not None:
            continue  # admitted earlier as a partner
        shared = [("p", p) for p in sorted(inst.job_pairs[j], key=lambda p: (inst.pairs[p].cost, p))
                  if choices[inst.pairs[p].partner_of(j)] is None]
        alone = [("o", i) for i in sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i))]
        choice = next((c for c in shared + alone if ledger.fits(c)), None)
        if choice is None:
            continue
        ledger.take(choice)
        choices[j] = choice
        if choice[0] == "p":
            choices[inst.pairs[choice[1]].partner_of(j)] = choice
    return choices
