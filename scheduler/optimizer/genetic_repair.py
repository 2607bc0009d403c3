"""The genetic algorithm's admission-aware repair: jobs left out, in admission order, are
admitted into free capacity; with `deep`, room is made first (genetic_room.py), a job of a
higher priority evicts the least valuable jobs of lower levels in its way, which get their own
turn, and finally one running job makes way for waiting jobs worth more than it (swap)."""
from .choices import Choice
from .genetic_admit import evict, insert
from .genetic_room import offload
from .genetic_table import GeneticTable, State


def repair(table: GeneticTable, choices: list[Choice] | State, deep: bool) -> list[Choice]:
    """The decision with the waiting jobs admitted where they can be (a State is changed in place)."""
    state = choices if isinstance(choices, State) else State(table, choices)
    waiting = [j for j in table.placeable if state.choices[j] is None]
    if deep:
        offload(table, state, waiting)
    k = 0
    while k < len(waiting):
        j = waiting[k]
        k += 1
        if state.choices[j] is not None or insert(table, state, j):
            continue
        if deep:
            evicted = evict(table, state, j)
            if evicted:
                waiting = waiting[:k] + sorted(set(waiting[k:]) | set(evicted), key=table.rank.get)
    if deep:
        swap(table, state)
    return state.choices


def swap(table: GeneticTable, state: State) -> None:
    """One out, more in: a running job whose GPUs admit waiting jobs worth more than it (two
    jobs of its level on two GPUs each instead of it on four), or admit some and it then finds
    room elsewhere."""
    inst = table.inst
    waiting = [j for j in table.placeable if state.choices[j] is None]
    if not waiting:
        return
    top = max(inst.jobs[j].priority for j in waiting)
    tried: set = set()  # (freed GPUs, value) that admitted nothing better since the last swap
    for w in reversed(table.order):
        held = state.choices[w]
        if held is None or held[0] != "o" or inst.jobs[w].priority > top:
            continue
        if (table.usage[held], inst.values[w]) in tried:
            continue
        snapshot = state.snapshot()
        state.drop(w)
        t = inst.all_options[held[1]].gpu_type
        gained = sum(inst.values[j] for j in waiting
                     if j != w and state.choices[j] is None and t in table.types_of[j] and insert(table, state, j))
        if gained > 0 and insert(table, state, w):
            gained += inst.values[w]  # it found room elsewhere
        if gained > inst.values[w] + 1e-9:
            waiting = sorted([j for j in waiting if state.choices[j] is None] + [w] * (state.choices[w] is None),
                             key=table.rank.get)
            tried.clear()
        else:
            state.restore(snapshot)
            tried.add((table.usage[held], inst.values[w]))
