"""Shared plumbing of every solver and policy: compile the problem into the aggregated
instance, let the subclass decide, place onto concrete GPUs, explain every pending job, and
time it all. A subclass implements only `decide(instance) -> Outcome`."""
import time
from dataclasses import dataclass, field
from typing import ClassVar

from . import admission_keeps
from .choices import Choice
from .instance import Instance, compile_instance
from .placement import FREED_NODE, place
from .problem import Plan, Problem, theta_error
from .quotas import CAPPED_DROPPED, LIFTED, binding, enforce_caps
from .reasons import pending_reason
from .status_quo import as_placed, keeping_running


@dataclass
class Outcome:
    choices: list[Choice]
    status: str = "feasible"
    gap: float | None = None
    bound: float | None = None
    variables: int = 0
    constraints: int = 0
    fallback_reason: str = ""
    notes: list[str] = field(default_factory=list)


class Solver:
    """solve(problem) -> Plan. `optimising` solvers only pick configurations that meet
    T_min and admit by priority; baselines follow their own rule."""

    name: ClassVar[str] = ""
    optimising: ClassVar[bool] = True
    # Quotas are constraints of its model (the ILP); other solvers get the jobs within quota
    # lifted above all others (quotas.lift_within_quota), and their plans say so.
    formulates_quotas: ClassVar[bool] = False
    # Its admission keeps running jobs that would throw away much work (admission_keeps.py):
    # the pending reasons say so.
    keeps_running_work: ClassVar[bool] = False

    def solve(self, problem: Problem) -> Plan:
        started = time.perf_counter()
        inst = compile_instance(problem, lift_quotas=not self.formulates_quotas)
        outcome = self.decide(inst)
        if not self.formulates_quotas and binding(problem):
            outcome.notes.append(LIFTED.format(solver=self.name))
        return finish(inst, outcome, self.name, self.optimising, started, self.keeps_running_work)

    def decide(self, inst: Instance) -> Outcome:
        raise NotImplementedError


def finish(inst: Instance, outcome: Outcome, name: str, optimising: bool, started: float, keeps: bool = False) -> Plan:
    decided = outcome.choices
    first = place(inst, decided, retry=optimising)
    decided, (placements, failed, placed, freed), note = (
        keeping_running(inst, decided, first) if optimising else (decided, first, None))
    if note:
        outcome.notes.append(note)
    moved = sum(1 for j, c in enumerate(placed) if c != decided[j] and inst.jobs[j].id in placements)
    capped, dropped = enforce_caps(inst, as_placed(inst, placements, placed))
    if dropped:
        kept = {inst.jobs[j].id for j, c in enumerate(capped) if c is not None}
        placements = {job_id: p for job_id, p in placements.items() if job_id in kept}
        outcome.notes.append(CAPPED_DROPPED.format(n=dropped))
    reasons = {}
    kept_jobs = admission_keeps.kept(inst) if keeps else {}
    power = objective = 0.0
    used_gpus = set()
    for j, job in enumerate(inst.jobs):
        placement = placements.get(job.id)
        if placement is None:
            reasons[job.id] = failed.get(j) or pending_reason(inst, j, name, optimising, capped, kept_jobs)
            continue
        power += placement.predicted_power_w
        objective += inst.cost(j, placed[j])
        used_gpus.update(placement.gpu_ids)
    if not inst.problem.settings.idle_gpus_powered_down:
        power += sum(inst.problem.gpu_types[g.gpu_type].idle_w for g in inst.problem.gpus if g.id not in used_gpus)
    return Plan(
        solver=name,
        placements=placements,
        reasons=reasons,
        power_w=power,
        objective=objective,
        status=outcome.status,
        energy_weight=inst.weight,
        load=inst.load,
        seconds=time.perf_counter() - started,
        gap=outcome.gap,
        bound=outcome.bound,
        variables=outcome.variables,
        constraints=outcome.constraints,
        fallback_reason=outcome.fallback_reason,
        notes=settings_notes(inst.problem) + outcome.notes + (
            [f"{moved} job(s) found no GPUs for the configuration chosen and took another meeting T_min."]
            if moved else []
        ) + ([FREED_NODE.format(n=freed)] if freed else []),
    )


def settings_notes(problem: Problem) -> list[str]:
    """Settings the solvers do not honour as asked, said in every plan's notes."""
    why = theta_error(problem.settings.theta)
    return [why] if why else []
