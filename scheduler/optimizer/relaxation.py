"""The LP relaxation of admission, rounded: a starting decision for the genetic algorithm
and, made exact, the decision the `cells` coordinator routes by.

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

The cells coordinator needs the most admitted, not nearly (exact_choices): rounding lost one
priority-0 job at 6144 GPUs (the relaxation held two jobs at one half each), so when the
rounded decision does not reach the relaxation's bound it solves the same matrix with integer
variables (0.6-0.8 s there at load 2).

`deadline` is on the CPU clock of the solver's time limits (cpu_clock.py).
"""
import math

import highspy
import numpy as np

from .capacity import CapacityLedger
from .choices import Choice
from .cpu_clock import cpu_now, stop_at
from .ilp import ADMISSION_ABS_GAP, ADMISSION_ABS_GAP_FAIRNESS
from .ilp_model import admitted_by_level, level_maxima, level_units
from .instance import Instance


def relaxed_admission(
    inst: Instance, deadline: float, full: frozenset[int] = frozenset(), *, integral: bool = False,
) -> list[tuple[Choice, float]] | None:
    """(choice, LP value) for every option and group, or None (no time, a HiGHS failure, or
    every level in `full`). `full`: priority levels known to be admitted completely together
    with every higher level (by a feasible decision at hand), which need no solve. With
    `integral`, the same program with integer variables (branch and bound, each level to its
    proven optimum: absolute gap below one job), values 0 or 1."""
    cols: list[Choice] = [("o", i) for opts in inst.job_options for i in opts] + [
        ("g", p) for p in range(len(inst.groups))
    ]
    if not cols:
        return []
    free = inst.free()
    row_of_cap = {key: r for r, key in enumerate(sorted(free))}
    n_cap = len(row_of_cap)
    starts, index, value = [0], [], []
    level_cost: dict[int, np.ndarray] = {}
    units = level_units(inst)
    for c, choice in enumerate(cols):
        jobs = inst.jobs_of(choice)
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
    if integral:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * len(cols)
        highs.setOptionValue("mip_rel_gap", 0.0)
        highs.setOptionValue(
            "mip_abs_gap",
            ADMISSION_ABS_GAP_FAIRNESS if inst.problem.settings.fairness_weight > 0 else ADMISSION_ABS_GAP,
        )
        highs.setOptionValue("presolve", "off")  # 0.6-0.8 s instead of 0.8-1.1 s at 6144 GPUs
    stop_at(highs, deadline)
    highs.passModel(lp)
    everything = np.arange(len(cols), dtype=np.int32)
    maxima = level_maxima(inst)
    if set(level_cost) <= full:
        return None  # every level is admitted in full already: nothing to learn
    for level in sorted(level_cost, reverse=True):
        if level in full:  # the level's optimum is known: all of it
            best = maxima[level]
        else:
            if deadline <= cpu_now():
                return None
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
    return None if relaxed is None else _rounded(inst, relaxed)


def exact_choices(
    inst: Instance, deadline: float, full: frozenset[int] = frozenset(),
) -> tuple[list[Choice], bool] | None:
    """(decision, whether it provably admits the most per priority level). The rounded
    relaxation when it provably does (see _proven); otherwise the integer program of admission
    (same matrix, integer variables), which the relaxation's near-integrality makes quick
    (0.6-0.8 s at 6144 GPUs); the rounded relaxation, unproven, when the integer program has
    no time. None when the relaxation is unavailable."""
    relaxed = relaxed_admission(inst, deadline, full)
    if relaxed is None:
        return None
    rounded = _rounded(inst, relaxed)
    bound: dict[int, float] = {}
    units = level_units(inst)
    for choice, value in relaxed:
        for j in inst.jobs_of(choice):
            if inst.values[j] > 0:
                level = inst.jobs[j].priority
                bound[level] = bound.get(level, 0.0) + value * inst.values[j] / units[level]
    if _proven(admitted_by_level(inst, rounded), bound, inst.problem.settings.fairness_weight > 0):
        return rounded, True
    exact = relaxed_admission(inst, deadline, full, integral=True)
    return (rounded, False) if exact is None else (_rounded(inst, exact), True)


def _proven(got: dict[int, float], bound: dict[int, float], fairness: bool) -> bool:
    """Whether a decision admitting `got` per level is lexicographically optimal by the
    relaxation's `bound` (its admitted value per level). A level's bound bounds the integer
    optimum only while every higher level is admitted at its own bound (a higher level held at
    a fractional value changes the room left below, either way), so every level but the lowest
    must reach its bound; the lowest needs only its bound rounded down, when values are counts
    (no fairness bonus)."""
    levels = sorted(bound, reverse=True)
    for n, level in enumerate(levels):
        need = math.floor(bound[level] + 1e-6) if n == len(levels) - 1 and not fairness else bound[level] - 1e-6
        if got.get(level, 0.0) < need - 1e-9:
            return False
    return True


def _rounded(inst: Instance, relaxed: list[tuple[Choice, float]]) -> list[Choice]:
    ledger = CapacityLedger(inst)
    choices: list[Choice] = [None] * len(inst.jobs)
    ranked = sorted(
        ((value, choice) for choice, value in relaxed if value > 1e-6),
        key=lambda vc: (-vc[0], inst.choice_cost(vc[1]), vc[1]),
    )
    for _, choice in ranked:
        jobs = inst.jobs_of(choice)
        if any(choices[j] is not None for j in jobs) or not ledger.fits(choice):
            continue
        ledger.take(choice)
        for j in jobs:
            choices[j] = choice
    return choices

