"""Admitting one waiting job into a decision of the genetic algorithm: into free capacity
(insert), or in place of running jobs of lower priority worth less than it (evict)."""
from .genetic_table import GeneticTable, State


def insert(table: GeneticTable, state: State, j: int) -> bool:
    """Admit waiting job j into free capacity: its cheapest option or new group that fits, or
    joining partners that run on one GPU of the group's type (no new GPU needed)."""
    inst = table.inst
    best = None
    for i in table.opts[j]:
        if state.fits(("o", i)):
            best = ("o", i)
            break
    for p in inst.job_groups[j]:
        group = inst.groups[p]
        others = group.partners_of(j)
        if all(state.choices[x] is None for x in others):
            if state.fits(("g", p)) and (
                best is None or group.cost < inst.choice_cost(best) + sum(table.min_cost[x] for x in others)
            ):
                best = ("g", p)
        elif inst.joined(state.choices, j, p):
            for x in others:
                state.drop(x)
            state.take(j, ("g", p))
            return True
    if best is None:
        return False
    state.take(j, best)
    return True


def evict(table: GeneticTable, state: State, j: int) -> list[int]:
    """Admit job j by evicting the least valuable running jobs of lower priority levels (not of
    its own: trading one job for another of the level for a fairness bonus would cost room
    that more jobs could use) on a GPU type of one of its configurations, if together they
    are worth less than j; the evicted."""
    inst = table.inst
    value = inst.values[j]
    level = inst.jobs[j].priority
    shared = [("g", p) for p in inst.job_groups[j]
              if all(state.choices[x] is None for x in inst.groups[p].partners_of(j))]
    for choice in [("o", i) for i in table.opts[j]] + shared:
        victims = []
        for w in table.cheapest_first.get(inst.type_of(choice), ()):
            if inst.values[w] >= value:
                break
            if state.choices[w] is not None and inst.jobs[w].priority < level:
                victims.append(w)
        if not victims:
            continue
        removed, lost = [], 0.0
        snapshot = state.snapshot()
        for w in victims:
            if state.fits(choice):
                break
            if state.choices[w] is None:
                continue
            released = state.drop(w)
            removed += released
            lost += sum(inst.values[x] for x in released)
        if state.fits(choice) and lost < sum(inst.values[x] for x in inst.jobs_of(choice)):
            state.take(j, choice)
            return removed
        state.restore(snapshot)
    return []
