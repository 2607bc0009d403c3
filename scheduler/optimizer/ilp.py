"""`ilp`: the integer program on HiGHS (through highspy) or CBC, lexicographically: first the
most admitted jobs, priority level by priority level from the highest, then the least power
among placements admitting that much.

Admission is solved one priority level at a time (docs/optimization.md, "Solving"): each
level's integer program maximises that level's admitted jobs (in units of its plain job, so
the objective's coefficients are near 1) with the higher levels held at their optimum by
floor constraints. One program over all levels at once needs values spanning many orders of
magnitude (admission.py) and an exact optimum (relative gap 0) on an objective near 10^8,
which HiGHS proves slowly (about 2 s at 1024 GPUs against a tenth of one per level).

The greedy decision is computed first: a level it fills completely, with every higher level
at the greedy's count, needs no program (its optimum is known). A problem may carry a better
known decision (Problem.admission_start: a cell's share of the cells coordinator's decision,
start.py), which then plays that part. On a solver error, or a time
limit without an incumbent, that known decision stands (the greedy one, or the admission start
where it admits more: a solve that stops never admits less than the decision it started from)
and the outcome says why; the cluster is never left without a decision. The time limit counts
CPU seconds (cpu_clock.py); with SolverSettings.node_limit (simulate's) each program stops at
that many branch-and-bound nodes instead, the same work on any machine.
"""
import highspy
import numpy as np
import pulp

from .admission import has_tie_breaks
from .base import Outcome, Solver
from .capacity import is_feasible
from .choices import Choice
from .cpu_clock import INTERRUPTS, Limit, cpu_now, has_solution, interrupt_after
from .greedy import cheapest, greedy_choices
from .ilp_model import (
    admitted_by_level,
    admitted_value,
    build,
    by_level,
    in_quota_value,
    level_maxima,
    objective,
    quota_maxima,
    start_of,
)
from .instance import Instance
from .start import choices_of

ADMISSION_SHARE = 0.5  # of the time limit, at most, for the admission phase (all levels)
# Absolute gap of a level's program, in units of the level's plain job: with integral counts
# (no fairness) a gap below 1 proves the optimum; with fairness (values 1..1.5) 0.5 still
# proves the most jobs admitted.
ADMISSION_ABS_GAP = 0.99
ADMISSION_ABS_GAP_FAIRNESS = 0.5
# With work at risk or fair share (admission.RISK_SHARE, FAIR_SHARE_WEIGHT), which jobs a level
# keeps turns on hundredths of a job: the gap must resolve them, or a solve stops at any
# victims of the right count.
ADMISSION_ABS_GAP_RISK = 0.01


class SolveFailed(Exception):
    """The backend gave no usable solution; the message says why."""


class StartedHiGHS(pulp.HiGHS):
    """HiGHS given a known solution to start from (by variable name, every other variable 0):
    with quotas, each admission stage starts from the previous stage's answer, which meets every
    floor so far, so a stage stopped at its time share still has an incumbent (without it the
    1024-GPU benchmark instance with quotas fell back to the greedy decision at the default
    limit). The power phase gets none: given one, it took 20 s instead of 3 there. A start that
    breaks a row is ignored by HiGHS."""

    def __init__(self, start: dict[str, float], **kwargs):
        super().__init__(**kwargs)
        self.start = start

    def callSolver(self, lp):
        values = [self.start.get(var.name, 0.0) for var in lp.variables()]
        lp.solverModel.setSolution(len(values), np.arange(len(values), dtype=np.int32), np.array(values))
        super().callSolver(lp)


def backend(name: str, *, limit: Limit, gap: float, abs_gap: float | None = None,
            start: dict[str, float] | None = None):
    """The PuLP solver stopping at the `limit` (cpu_clock.py: a CPU-clock deadline, or a number
    of branch-and-bound nodes): HiGHS through the interrupt callback, CBC through its own limits
    (time counted in CPU time). `start`: a solution for HiGHS to start from (CBC starts from
    nothing)."""
    extra = {} if abs_gap is None else {"mip_abs_gap": abs_gap}
    if name == "highs":
        kwargs = {"msg": False, "gapRel": gap, "threads": 1, "callbackTuple": (interrupt_after, limit),
                  "callbacksToActivate": list(INTERRUPTS), **extra}
        return pulp.HiGHS(**kwargs) if start is None else StartedHiGHS(start, **kwargs)
    if name == "cbc":
        by_time = {"timeLimit": max(limit.deadline - cpu_now(), 0.0)} if limit.nodes == 0 else {"maxNodes": limit.nodes}
        return pulp.PULP_CBC_CMD(msg=False, timeMode="cpu", gapRel=gap, gapAbs=abs_gap, threads=1, **by_time)
    raise SolveFailed("is not an ILP backend (use 'highs' or 'cbc')")


class IlpSolver(Solver):
    name = "ilp"
    formulates_quotas = True
    keeps_running_work = True

    def decide(self, inst: Instance) -> Outcome:
        settings = inst.problem.settings
        greedy = greedy_choices(inst, fill_order(inst), cheapest)
        started = cpu_now()
        limit = Limit.of(started, settings.time_limit_s, settings.node_limit)
        if not any(inst.job_options) and not inst.groups:
            return Outcome(greedy, status="optimal", gap=0.0)  # nothing can be placed: nothing to decide
        known = known_decision(inst, greedy)
        outcome = Outcome(known, status="fallback")
        notes = outcome.notes
        latest: list[list[Choice]] = []  # with quotas, the admission stages' answers
        try:
            floors, quota_floors = self._admission(
                inst, known, Limit.of(started, ADMISSION_SHARE * settings.time_limit_s, settings.node_limit), notes,
                latest,
            )
            model = build(inst, phase="power", admit_floors=floors, quota_floors=quota_floors)
            status, gap, bound = self._run(model, settings.backend, limit, settings.gap, "power")
            if status != "optimal":
                notes.append(f"Power phase stopped at {limit_words(settings)}.")
            if notes:
                status = "feasible"
            choices = model.choices(inst)
            outcome.variables, outcome.constraints = model.size
            if not is_feasible(inst, choices):
                raise SolveFailed("the solver's answer broke a capacity or pairing constraint")
        except (SolveFailed, pulp.PulpSolverError, OSError) as exc:
            if latest and is_feasible(inst, latest[-1]) and by_level(inst, latest[-1]) >= by_level(inst, known):
                # meets every floor set; a quota stage's answer can admit fewer jobs than the known
                # decision (it counts only what runs within quotas): then the known one stands
                outcome.choices = latest[-1]
                outcome.fallback_reason = f"{settings.backend} {exc}; fell back to the admission phase's decision."
            else:
                outcome.fallback_reason = f"{settings.backend} {exc}; fell back to {known_name(known, greedy)}."
            return outcome
        admits_as_much = admitted_value(inst, known) >= admitted_value(inst, choices) - 1e-9 and within_quota_as_much(
            inst, known, choices)
        if admits_as_much and objective(inst, known) < objective(inst, choices):
            outcome.notes.append(
                f"{known_name(known, greedy).capitalize()} was cheaper than the solver's incumbent at the time limit."
            )
            outcome.status = status
            return outcome
        return Outcome(
            choices, status=status, gap=gap, bound=bound, variables=outcome.variables, constraints=outcome.constraints,
            notes=notes,
        )

    def _admission(
        self, inst: Instance, known: list[Choice], limit: Limit, notes: list[str], latest: list[list[Choice]],
    ) -> tuple[dict[int, float], dict[int, float]]:
        """(admit floors, in-quota floors): per priority level, the most admitted (in units of
        the level's plain job), highest level first, each level's program holding the higher
        levels at their optimum; with quotas, the in-quota admitted value's levels come first
        (docs/optimization.md, "Quotas"). `known`: a feasible decision (the greedy one, or the
        problem's admission start): a level it admits completely needs no program, and its
        counts stand where a program finds no more. With quotas, each program starts from the
        latest decision meeting every floor so far (StartedHiGHS), appended to `latest` (where a
        power phase that finds nothing falls back to it)."""
        settings = inst.problem.settings
        start = start_of(inst, known) if inst.quotas else None
        best = {("quota", lvl): v for lvl, v in quota_maxima(inst).items()}
        best.update({("admit", lvl): v for lvl, v in level_maxima(inst).items()})
        known_got = _counts(inst, known, None)
        abs_gap = ADMISSION_ABS_GAP_FAIRNESS if settings.fairness_weight > 0 else ADMISSION_ABS_GAP
        floors: dict[tuple[str, int], float] = {}
        known_ok = True  # the known decision meets every floor set so far
        stages = sorted(best, key=lambda stage: (stage[0] == "quota", stage[1]), reverse=True)
        for n, (kind, level) in enumerate(stages):
            own = known_got.get((kind, level), 0.0)
            if known_ok and own >= best[(kind, level)] - 1e-9:
                floors[(kind, level)] = own  # the known decision admits the whole level: its optimum
                continue
            model = build(inst, phase="admit", admit_floors=_of(floors, "admit"), quota_floors=_of(floors, "quota"),
                          **({"quota_level": level} if kind == "quota" else {"level": level}))
            ties = has_tie_breaks(tuple(job for job in inst.jobs if job.priority == level))
            status, _, bound = self._run(
                model, settings.backend, limit, 0.0,
                f"admission (level {level}" + (", within quotas)" if kind == "quota" else ")"),
                abs_gap=ADMISSION_ABS_GAP_RISK if ties else abs_gap, start=start,
            )
            found = model.choices(inst)
            got = _counts(inst, found, model)
            if status != "optimal":  # the incumbent at the limit, and what else fits beside it
                found = greedy_choices(inst, fill_order(inst), cheapest, start=found)
                got = _counts(inst, found, None)
            if known_ok and own >= got.get((kind, level), 0.0) - 1e-9:
                found, got = known, known_got  # no better than the known decision: keep its counts
            elif start is not None:
                start = {var.name: var.value() or 0.0 for var in model.lp.variables()}
                latest.append(found)
            floors[(kind, level)] = got.get((kind, level), 0.0)
            known_ok = known_ok and found is known
            if status != "optimal":
                notes.append(
                    f"Admission phase stopped at {share_words(settings)} at {_stage_name(kind, level)}: admitted "
                    f"{floors[(kind, level)]:g}" + (f", bound {bound:g}." if bound is not None else ".")
                )
                for lower in stages[n + 1:]:  # the incumbent's counts: feasible with the floors above
                    floors[lower] = got.get(lower, 0.0)
                break
        return _of(floors, "admit"), _of(floors, "quota")

    @staticmethod
    def _run(model, backend_name: str, limit: Limit, gap: float, phase: str, abs_gap: float | None = None,
             start: dict[str, float] | None = None):
        """Solve one phase within the limit: (status, relative gap, bound) or SolveFailed."""
        if not limit.nodes and limit.deadline <= cpu_now():
            raise SolveFailed(f"had no time left for the {phase} phase (time limit)")
        model.lp.solve(backend(backend_name, limit=limit, gap=gap, abs_gap=abs_gap, start=start))
        highs = getattr(model.lp, "solverModel", None)
        if backend_name == "highs" and highs is not None and not has_solution(highs):
            stopped = highs.getModelStatus() == highspy.HighsModelStatus.kInterrupt
            what = "work" if limit.nodes else "time"
            why = f"stopped at its {what} limit" if stopped else highs.modelStatusToString(highs.getModelStatus())
            raise SolveFailed(f"found no solution in the {phase} phase ({why})")
        if model.lp.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
            raise SolveFailed(f"found no solution in the {phase} phase ({pulp.LpStatus[model.lp.status]})")
        optimal = model.lp.sol_status == pulp.LpSolutionOptimal
        if backend_name == "highs" and highs is not None:
            info = highs.getInfo()
            optimal = highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
            sense = -1.0 if model.lp.sense == pulp.LpMaximize else 1.0  # PuLP hands HiGHS a maximum negated
            return ("optimal" if optimal else "feasible"), max(0.0, info.mip_gap), sense * info.mip_dual_bound
        return ("optimal" if optimal else "feasible"), None, None


def _counts(inst: Instance, choices: list[Choice], model) -> dict[tuple[str, int], float]:
    """A decision's admitted value per stage: ("admit", level) and ("quota", level), the latter
    from the model's quota copies where a model solved it, else counted (ilp_model.in_quota_value)."""
    out = {("admit", lvl): v for lvl, v in admitted_by_level(inst, choices).items()}
    if inst.quotas.nominal:
        in_quota = model.in_quota_by_level() if model is not None else in_quota_value(inst, choices)
        out.update({("quota", lvl): v for lvl, v in in_quota.items()})
    return out


def within_quota_as_much(inst: Instance, known: list[Choice], choices: list[Choice]) -> bool:
    """The known decision admits at least as much within quotas at every level as the solver's
    (counted alike, ilp_model.in_quota_value): only then may it stand for being cheaper, or a
    borrower it keeps would hold what an owner reclaimed."""
    if not inst.quotas.nominal:
        return True
    mine, theirs = in_quota_value(inst, known), in_quota_value(inst, choices)
    return all(mine.get(level, 0.0) >= value - 1e-9 for level, value in theirs.items())


def limit_words(settings) -> str:
    """The limit a program stopped at, in words (a plan's notes)."""
    if settings.node_limit:
        return f"its work limit ({settings.node_limit} branch-and-bound nodes)"
    return f"its time limit ({settings.time_limit_s:g} s of CPU time)"


def share_words(settings) -> str:
    """The admission phase's share of the limit, in words."""
    return f"its work limit ({settings.node_limit} nodes a program)" if settings.node_limit else "its time share"


def _of(floors: dict[tuple[str, int], float], kind: str) -> dict[int, float]:
    return {level: floor for (k, level), floor in floors.items() if k == kind}


def _stage_name(kind: str, level: int) -> str:
    return f"admission level {level}" + (" within quotas" if kind == "quota" else "")


def known_name(known: list[Choice], greedy: list[Choice]) -> str:
    """What a fallback falls back to, in words."""
    return (
        "the greedy decision" if known is greedy else "the admission start (the coordinator's decision for these jobs)"
    )


def known_decision(inst: Instance, greedy: list[Choice]) -> list[Choice]:
    """The greedy decision, or the problem's admission start (start.py) where that is feasible
    and admits lexicographically more per priority level: the decision the admission phase
    starts from (a failed solve still falls back to the greedy decision)."""
    if not inst.problem.admission_start:
        return greedy
    start = choices_of(inst, inst.problem.admission_start)
    return start if is_feasible(inst, start) and by_level(inst, start) > by_level(inst, greedy) else greedy


def fill_order(inst: Instance) -> list[int]:
    """The greedy decision's order: admission order, jobs within their tenant's quota first."""
    return inst.within_quota_first(inst.admission_order())

