"""The LP relaxation of admission, rounded: a starting decision for the genetic algorithm.

Which jobs to admit is a packing problem over GPU types; greedy orders and local moves get
within about 1% of the most jobs on large instances but not to it (on the 6144-GPU benchmark
instance the greedy-seeded genetic algorithm admitted 26 lowest-priority jobs fewer than the
ILP). The linear relaxation of the admission program (the same variables and capacity rows as
ilp_model, continuous, no integer search) is nearly integral on such instances, because the
co-location candidates form a matching; solving it, priority level by priority level with the
higher levels held at their optimum, and rounding (choices by decreasing LP value, each taken
while it fits) gives a decision that admits as many jobs, or nearly, for a fraction of the
integer program's time. The matrix goes to HiGHS directly (highspy), without PuLP's model
layer, which at 6144 GPUs would take longer than the solve.

This is one individual of the genetic algorithm's first population, no more: crossover,
mutation, repair and the power descent work on it like on the greedy decision, and the
fitness decides. None is returned when HiGHS fails or has no time, or when a decision at hand
already admits every job that can run; the genetic algorithm then starts from its greedy
seeds alone.
"""
import time

import highspy
import numpy as np

from .capacity import CapacityLedger
from .choices import Choice
from .ilp_model import admitted_by_level, level_maxima, level_units
from .instance import Instance


def relaxed_admission(inst: Instance, deadline: float, full: frozenset[int] = frozenset()) -> list[tuple[Choice, float]] | None:
    """(choice, LP value) for every option and pair, or None (no time, a HiGHS failure, or
    every level in `full`). `full`: priority levels known to be admitted completely together
    with every higher level (by a feasible decision at hand), which need no solve."""
    cols: list[Choice] = [("o", i) for opts in inst.job_options for i in opts] + [("p", p) for p in range(len(inst.pairs))]
    if not cols:
        return []
    free = inst.free()
    row_of_cap = {key: r for r, key in enumerate(sorted(free))}
    n_cap = len(row_of_cap)
    starts, index, value = [0], [], []
    level_cost: dict[int, np.ndarray] = {}
    units = level_units(inst)
    for c, choice in enumerate(cols):
        jobs = [inst.pairs[choice[1]].a, inst.pairs[choice[1]].b] if choice[0] == "p" else [inst.all_options[choice[1]].job]
        for t, s, n in inst.usage(choice):
            index.append(row_of_cap[(t, s)])
            value.append(float(n))
        for j in jobs:
            index.append(n_cap + j)
            value.append(1.0)
            level = inst.jobs[j].priority
            if inst.values[j] > 0:
                if level not in level_cost:
                    level_cost[level] = np.zeros(len(cols))
                level_cost[level][c] += inst.values[j] / units[level]
        starts.append(len(index))
    lp = highspy.HighsLp()
    lp.num_col_ = len(cols)
    lp.num_row_ = n_cap + len(inst.jobs)
    lp.col_cost_ = np.zeros(len(cols))
    lp.col_lower_ = np.zeros(len(cols))
    lp.col_upper_ = np.ones(len(cols))
    lp.row_lower_ = np.full(lp.num_row_, -highspy.kHighsInf)
    lp.row_upper_ = np.array([float(free[key]) for key in sorted(free)] + [1.0] * len(inst.jobs))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value)
    lp.sense_ = highspy.ObjSense.kMaximize
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.passModel(lp)
    everything = np.arange(len(cols), dtype=np.int32)
    maxima = level_maxima(inst)
    if set(level_cost) <= full:
        return None  # every level is admitted in full already: nothing to learn
    for level in sorted(level_cost, reverse=True):
        if level in full:  # the level's optimum is known: all of it
            best = maxima[level]
        else:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            highs.setOptionValue("time_limit", remaining)
            highs.changeColsCost(len(cols), everything, level_cost[level])
            highs.run()
            if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            best = highs.getInfo().objective_function_value
        nonzero = np.nonzero(level_cost[level])[0].astype(np.int32)
        highs.addRow(best - 1e-6, highspy.kHighsInf, len(nonzero), nonzero, level_cost[level][nonzero])
    solution = highs.getSolution().col_value
    return list(zip(cols, solution))


def full_levels(inst: Instance, choices: list[Choice]) -> frozenset[int]:
    """Priority levels a feasible decision admits completely, together with every higher
    level: their optimum is known, so the relaxation need not solve for them."""
    maxima, admitted = level_maxima(inst), admitted_by_level(inst, choices)
    full = set()
    for level in sorted(maxima, reverse=True):
        if admitted.get(level, 0.0) < maxima[level] - 1e-9:
            break
        full.add(level)
    return frozenset(full)


def rounded_choices(inst: Instance, deadline: float, full: frozenset[int] = frozenset()) -> list[Choice] | None:
    """The relaxation's choices by decreasing LP value (ties: cheaper first), each taken when
    its job(s) are still undecided and it fits; None when the relaxation is unavailable."""
    relaxed = relaxed_admission(inst, deadline, full)
    if relaxed is None:
        return None
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    ranked = sorted(
        ((value, choice) for choice, value in relaxed if value > 1e-6),
        key=lambda vc: (-vc[0], _cost(inst, vc[1]), vc[1]),
    )
    for _, choice in ranked:
        jobs = [inst.pairs[choice[1]].a, inst.pairs[choice[1]].b] if choice[0] == "p" else [inst.all_options[choice[1]].job]
        if any(choices[j] is not None for j in jobs) or not ledger.fits(choice):
            continue
        ledger.take(choice)
        for j in jobs:
            choices[j] = choice
    return choices


def _cost(inst: Instance, choice: Choice) -> float:
    return inst.pairs[choice[1]].cost if choice[0] == "p" else inst.all_options[choice[1]].cost
