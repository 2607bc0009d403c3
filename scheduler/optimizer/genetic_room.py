"""Making room for waiting jobs in a decision of the genetic algorithm (deep repair): running
multi-GPU jobs shrink to fewer GPUs of another type, single-GPU jobs or groups moving over to
make space for them (exchange), and the GPU types no waiting job can use are flooded with
running jobs from the types they need (relocate). The power descent afterwards moves back
whoever still fits where it was cheaper."""
from .choices import Choice
from .genetic_admit import insert
from .genetic_table import GeneticTable, State


def relocate(table: GeneticTable, state: State, w: int, t: str, onto: set | None = None) -> bool:
    """Move running job w (and its partners, when it shares) off GPU type t, onto their
    configurations elsewhere (only types in `onto`, if given) that fit, the roomiest type
    first; False (nothing changed) when they do not fit."""
    inst = table.inst
    held = state.choices[w]
    moved = state.drop(w)
    if held[0] == "g":  # the same jobs sharing a GPU of another type
        for p in table.siblings[held[1]]:
            u = inst.groups[p].gpu_type
            if u != t and (onto is None or u in onto) and state.fits(("g", p)):
                state.take(w, ("g", p))
                return True
    placed = []
    for x in moved:  # the roomiest other type first: it is the least contested
        for i in sorted(table.opts[x], key=lambda i: (-state.ledger.free.get((inst.all_options[i].gpu_type, 1), 0), i)):
            u = inst.all_options[i].gpu_type
            if u != t and (onto is None or u in onto) and state.fits(("o", i)):
                state.take(x, ("o", i))
                placed.append(x)
                break
        else:
            for x2 in placed:
                state.drop(x2)
            state.take(w, held)
            return False
    return True


def exchange(table: GeneticTable, state: State, choice: Choice, t: str, k: int, tried: set) -> bool:
    """Room for `choice` (on type u) by moving up to k single-GPU jobs, then groups, from u
    onto type t, where k GPUs were just released; False (nothing changed) if that fails.
    `tried` remembers the attempts that failed, so they are not repeated."""
    u = table.inst.type_of(choice)
    key = (table.usage[choice], t, k, tuple(sorted(state.ledger.free.items())))
    if u == t or key in tried:
        return False
    snapshot = state.snapshot()
    moved = _move_singles(table, state, choice, u, t, k)
    if state.fits(choice):
        return True
    if moved < k:
        _move_groups(table, state, choice, u, t, k - moved)
        if state.fits(choice):
            return True
    state.restore(snapshot)
    tried.add(key)
    return False


def _move_singles(table: GeneticTable, state: State, choice: Choice, u: str, t: str, k: int) -> int:
    """Move up to k jobs alone on one GPU of type u onto one of type t, until `choice` fits;
    how many moved."""
    inst = table.inst
    moved = 0
    for v in table.singles.get((u, t), ()):
        held = state.choices[v]
        if held is None or held[0] != "o" or inst.all_options[held[1]].gpu_type != u:
            continue
        target = next((("o", i) for i in table.opts[v] if inst.all_options[i].gpu_type == t
                       and inst.all_options[i].num_gpus == 1 and state.fits(("o", i))), None)
        if target is None:
            continue
        state.drop(v)
        state.take(v, target)
        moved += 1
        if state.fits(choice) or moved >= k:
            break
    return moved


def _move_groups(table: GeneticTable, state: State, choice: Choice, u: str, t: str, k: int) -> None:
    """Move up to k groups from a GPU of type u to the same group on type t, until `choice` fits."""
    inst = table.inst
    moved = 0
    for p, q in table.group_moves.get((u, t), ()):
        first = inst.groups[p].members[0]
        if state.choices[first] != ("g", p) or not state.fits(("g", q)):
            continue
        state.drop(first)
        state.take(first, ("g", q))
        moved += 1
        if state.fits(choice) or moved >= k:
            break


def offload(table: GeneticTable, state: State, waiting: list[int]) -> None:
    """Make room for waiting jobs: running multi-GPU jobs (least valuable first) shrink to a
    configuration on fewer GPUs where one fits; then the GPU types no waiting job can use are
    flooded with running jobs from the types the waiting jobs need."""
    waiting = [j for j in waiting if not insert(table, state, j)]
    if not waiting:
        return
    shrink(table, state)
    waiting = [j for j in waiting if not insert(table, state, j)]
    if not waiting:
        return
    needed = set().union(*(table.types_of[j] for j in waiting))
    spare = {t for t in table.inst.capacity if t not in needed and state.ledger.free.get((t, 1), 0) > 0}
    if not spare:
        return
    for w in reversed(table.order):
        held = state.choices[w]
        if held is None or table.inst.type_of(held) not in needed or not (table.types_of[w] & spare):
            continue
        relocate(table, state, w, table.inst.type_of(held), spare)


def shrink(table: GeneticTable, state: State) -> None:
    """Each running multi-GPU job, least valuable first, takes a configuration on fewer GPUs
    (of another type) where one fits or an exchange makes it fit."""
    inst = table.inst
    tried: set = set()
    for w in reversed(table.order):
        held = state.choices[w]
        if held is None or held[0] != "o" or inst.all_options[held[1]].num_gpus == 1:
            continue
        k = inst.all_options[held[1]].num_gpus
        t = inst.all_options[held[1]].gpu_type
        state.drop(w)
        for i in table.opts[w]:
            opt = inst.all_options[i]
            if opt.num_gpus < k and (state.fits(("o", i)) or exchange(table, state, ("o", i), t, k, tried)):
                state.take(w, ("o", i))
                break
        else:
            state.take(w, held)
