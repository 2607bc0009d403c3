"""Placement's safety net for running jobs: a decision whose placement leaves a running job it
admitted without GPUs is placed a second time with the running jobs it moves kept where they
run, and that placement stands where it admits more: first with only the running jobs it
left without GPUs put back, then with every running job it moves.

The aggregated model counts a type's free GPUs, not where they are, nor PCIe switches: it can
move two running one-GPU jobs onto another type to make room for a newcomer and give a running
two-GPU job two GPUs of one node that no node has free (they are one on each node). Placement
(retry, defragment.py) finds no room for it, and the newcomer has in effect preempted a
running job of its own level, which no admission rule allows. The second placement keeps what
runs on its GPUs (placement's first step), so it loses what the moves would have won (the
newcomer may wait) rather than a running job's work. Not reset: a job whose current
configuration no longer meets its T_min (moved on purpose), jobs the decision does not
admit (a higher priority or an owner's quota preempts them on purpose), borrowers (an owner
reclaims their GPUs, quotas.py), jobs leaving a board at risk, and a running group some of
whose jobs the decision does not admit.

The placements are compared as the admission phase compares decisions: admitted value per
priority level, highest first (admission.py: within a level running jobs are worth a little
more, by the work they would lose).
"""
from .admission_keeps import borrowing
from .choices import Choice
from .feasibility import group_meets_tmin
from .ilp_model import by_level
from .instance import Instance
from .placement import place

KEPT_RUNNING = ("Placement found no GPUs for {n} running job(s) the decision admits; placed again with running jobs "
                "left where they run, it admits more, and that placement stands.")


def keeping_running(inst: Instance, decided: list[Choice], first: tuple) -> tuple[list[Choice], tuple, str | None]:
    """(the decision, its placement (placement.place's 4-tuple), a note or None): `decided` with
    its `first` placement, or, where that left running jobs it admits without GPUs, the first
    second placement that admits more: with those jobs put back, then with every moved one."""
    lost = dropped_running(inst, decided, first[1])
    tried = [decided]
    for only in (set(first[1]), None) if lost else ():
        again = kept_in_place(inst, decided, only)
        if again in tried:
            continue
        tried.append(again)
        second = place(inst, again, retry=True)
        if admits_more(inst, as_placed(inst, second[0], second[2]), as_placed(inst, first[0], first[2])):
            return again, second, KEPT_RUNNING.format(n=lost)
    return decided, first, None


def as_placed(inst: Instance, placements: dict, placed: list[Choice]) -> list[Choice]:
    """The choices as placed, None for every job placement left without GPUs."""
    return [c if inst.jobs[j].id in placements else None for j, c in enumerate(placed)]


def dropped_running(inst: Instance, choices: list[Choice], failed: dict[int, str]) -> int:
    """Running jobs that the decision admits and placement left without GPUs."""
    return sum(1 for j in failed if inst.jobs[j].current is not None and choices[j] is not None)


def kept_in_place(inst: Instance, choices: list[Choice], only: set[int] | None = None) -> list[Choice]:
    """The decision with each running job it admits elsewhere (of `only`, where given) back on
    its current choice where that still meets T_min (see the module's text for which are not),
    and a waiting job whose group lost a partner to that on its cheapest option meeting T_min
    (placement tries its others)."""
    type_of = {gpu.id: gpu.gpu_type for gpu in inst.problem.gpus}
    lent = borrowing(inst, type_of)
    out = list(choices)
    for j, job in enumerate(inst.jobs):
        if choices[j] is None or job.current is None or not job.current.gpu_ids or job.leaving or (
                only is not None and j not in only):
            continue
        now = inst.current_choice(j)
        if now is None or now == choices[j] or (job.tenant, type_of.get(job.current.gpu_ids[0])) in lent:
            continue
        if _meets_tmin(inst, now) and all(choices[x] is not None for x in inst.jobs_of(now)):
            for x in inst.jobs_of(now):
                out[x] = now
    for j, choice in enumerate(out):
        if choice is not None and choice[0] == "g" and any(out[x] != choice for x in inst.groups[choice[1]].members):
            options = sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i))
            out[j] = ("o", options[0]) if options else None
    return out


def _meets_tmin(inst: Instance, choice: Choice) -> bool:
    """A current choice still meets its jobs' T_min (one below it is moved on purpose)."""
    if choice[0] == "o":
        return inst.all_options[choice[1]].meets_slo
    group = inst.groups[choice[1]]
    return group_meets_tmin(group.taus, (inst.jobs[x] for x in group.members))


def admits_more(inst: Instance, placed: list[Choice], than: list[Choice]) -> bool:
    """The decision `placed` (None for every job without GPUs) is worth lexicographically more
    per priority level than `than` (ilp_model.by_level; sums that differ only in their last
    bits, from adding the same values in another order, count as equal)."""
    return [round(v, 9) for v in by_level(inst, placed)] > [round(v, 9) for v in by_level(inst, than)]
