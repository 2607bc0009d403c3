"""The genetic algorithm's frozen table of an instance, and the decision it changes job by job.

Every operator of the genetic algorithm asks the same questions of the instance thousands of
times (a job's options cheapest first, what a choice takes from capacity, which running jobs
could move from one GPU type to another); the table answers them from indexes built once per
solve, and cannot be changed by an operator by accident (tuples, read-only mappings)."""
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .capacity import CapacityLedger
from .choices import Choice
from .instance import Instance

Usage = tuple[tuple[tuple[str, int], int], ...]  # ((GPU type, block size), GPUs) pairs


@dataclass(frozen=True)
class GeneticTable:
    inst: Instance
    order: tuple[int, ...]  # admission order
    rank: Mapping[int, int]  # job -> its place in the admission order
    opts: tuple[tuple[int, ...], ...]  # per job: its options meeting T_min, cheapest first
    genes: tuple[tuple[Choice, ...], ...]  # per job: what its gene may hold besides None (options, then groups)
    mutable: tuple[int, ...]  # jobs whose gene has a choice to make
    placeable: tuple[int, ...]  # jobs with any option or group, in admission order
    cheapest_first: Mapping[str, tuple[int, ...]]  # GPU type -> jobs that can run there, least valuable first
    types_of: tuple[frozenset[str], ...]  # per job: the GPU types of its genes
    siblings: tuple[tuple[int, ...], ...]  # per group: the groups of the same jobs, on any type
    singles: Mapping[tuple[str, str], tuple[int, ...]]  # (from type, to type) -> jobs with one GPU on each
    group_moves: Mapping[tuple[str, str], tuple[tuple[int, int], ...]]  # (from, to type) -> (group, same jobs there)
    usage: Mapping[Choice, Usage]  # choice -> what it takes from capacity
    min_cost: tuple[float, ...]  # per job: the cost of its cheapest option (0 without one)


def build_table(inst: Instance) -> GeneticTable:
    order = inst.admission_order()
    rank = {j: r for r, j in enumerate(order)}
    n_jobs = len(inst.jobs)
    opts = [tuple(sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i))) for j in range(n_jobs)]
    genes = [tuple([("o", i) for i in opts[j]] + [("g", p) for p in inst.job_groups[j]]) for j in range(n_jobs)]
    placeable = [j for j in order if genes[j]]
    return GeneticTable(
        inst=inst,
        order=tuple(order),
        rank=MappingProxyType(rank),
        opts=tuple(opts),
        genes=tuple(genes),
        mutable=tuple(j for j in range(n_jobs) if len(genes[j]) > 1 or inst.job_groups[j]),
        placeable=tuple(placeable),
        cheapest_first=_cheapest_first(inst, opts, placeable, rank),
        types_of=tuple(frozenset(inst.type_of(c) for c in genes[j]) for j in range(n_jobs)),
        siblings=_siblings(inst),
        singles=_singles(inst, opts, order),
        group_moves=_group_moves(inst),
        usage=MappingProxyType({c: tuple(((t, s), n) for t, s, n in inst.usage(c)) for row in genes for c in row}),
        min_cost=tuple(inst.choice_cost(("o", opts[j][0])) if opts[j] else 0.0 for j in range(n_jobs)),
    )


def _cheapest_first(inst: Instance, opts, placeable: list[int], rank: dict) -> Mapping[str, tuple[int, ...]]:
    """GPU type -> the jobs with an option or group there, least valuable first (whom to evict)."""
    by_type: dict[str, list[int]] = {}
    for j in placeable:
        types = {inst.all_options[i].gpu_type for i in opts[j]} | {inst.groups[p].gpu_type for p in inst.job_groups[j]}
        for t in types:
            by_type.setdefault(t, []).append(j)
    return MappingProxyType(
        {t: tuple(sorted(js, key=lambda w: (inst.values[w], -rank[w]))) for t, js in by_type.items()}
    )


def _siblings(inst: Instance) -> tuple[tuple[int, ...], ...]:
    same_jobs: dict[tuple[int, ...], list[int]] = {}
    for p, group in enumerate(inst.groups):
        same_jobs.setdefault(group.members, []).append(p)
    return tuple(tuple(same_jobs[group.members]) for group in inst.groups)


def _singles(inst: Instance, opts, order: list[int]) -> Mapping[tuple[str, str], tuple[int, ...]]:
    """(from type, to type) -> jobs with a single-GPU option on each, the last admitted first."""
    singles: dict[tuple[str, str], list[int]] = {}
    for j in reversed(order):
        one = {inst.all_options[i].gpu_type for i in opts[j] if inst.all_options[i].num_gpus == 1}
        for a in one:
            for b in one - {a}:
                singles.setdefault((a, b), []).append(j)
    return MappingProxyType({key: tuple(js) for key, js in singles.items()})


def _group_moves(inst: Instance) -> Mapping[tuple[str, str], tuple[tuple[int, int], ...]]:
    siblings = _siblings(inst)
    moves: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for p, group in enumerate(inst.groups):
        for q in siblings[p]:
            if inst.groups[q].gpu_type != group.gpu_type:
                moves.setdefault((group.gpu_type, inst.groups[q].gpu_type), []).append((p, q))
    return MappingProxyType({key: tuple(pairs) for key, pairs in moves.items()})


class State:
    """A decision with its capacity ledger, changed job by job (a group's jobs move together)."""

    def __init__(self, table: GeneticTable, choices: list[Choice]):
        self.inst = table.inst
        self.usage = table.usage
        self.choices = list(choices)
        self.ledger = CapacityLedger(table.inst)
        seen = set()
        for choice in self.choices:
            if choice is not None and choice not in seen:
                seen.add(choice)
                self.ledger.take(choice)

    def fits(self, choice: Choice) -> bool:
        free = self.ledger.free
        return all(free.get(key, 0) >= n for key, n in self.usage[choice])

    def take(self, j: int, choice: Choice) -> None:
        free = self.ledger.free
        for key, n in self.usage[choice]:
            free[key] -= n
        for x in self.inst.jobs_of(choice):
            self.choices[x] = choice

    def drop(self, j: int) -> list[int]:
        """Release job j's choice (a group releases all its jobs); the jobs released."""
        choice = self.choices[j]
        if choice is None:
            return []
        free = self.ledger.free
        for key, n in self.usage[choice]:
            free[key] += n
        jobs = list(self.inst.jobs_of(choice))
        for x in jobs:
            self.choices[x] = None
        return jobs

    def snapshot(self) -> tuple[list[Choice], dict]:
        return list(self.choices), dict(self.ledger.free)

    def restore(self, snapshot: tuple[list[Choice], dict]) -> None:
        self.choices, self.ledger.free = snapshot
