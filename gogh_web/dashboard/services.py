"""Writes and solves behind the Trade-off page: the sweep (cached per cluster state, its
points solved by Celery tasks), the preview (a dry-run solve with proposed settings) and
apply (staff only, through scheduler.services.solver_config_update, which audits it)."""
import logging
from dataclasses import dataclass
from functools import partial

from django.core.exceptions import PermissionDenied
from django.db import transaction

from scheduler import optimizer
from scheduler.models import SolverConfig
from scheduler.optimizer import Allocation, Problem
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict
from scheduler.problem_source import problem_from_database
from scheduler.selectors import jobs_visible_to
from scheduler.services import solver_config_update

from . import tradeoff
from .models import TradeoffPoint, TradeoffSweep
from .selectors import current_served

log = logging.getLogger(__name__)
#: SolverConfig fields the Trade-off page previews and applies.
TRADEOFF_FIELDS = ("base_energy_weight", "adaptive_weight", "load_window", "throughput_value_w")
SWEEPS_KEPT = 20


def _solve(problem: Problem) -> Allocation:
    """The configured solver in this process (`cells` solves its cells in turn here)."""
    return optimizer.get_solver(problem.settings.solver).solve(problem)


def _sweep_problem() -> Problem:
    config = SolverConfig.load()
    config.throughput_value_w = tradeoff.surplus_value_w(config.throughput_value_w)  # not saved
    return problem_from_database(config)


def tradeoff_sweep_for_current_state() -> TradeoffSweep:
    """The sweep of the cluster as it is now: the cached one when the state digest is known,
    else a new one whose points go to the workers as one Celery group once it commits."""
    problem = _sweep_problem()
    data = problem_to_dict(problem)
    digest = tradeoff.state_digest(data)
    with transaction.atomic():
        sweep, created = TradeoffSweep.objects.get_or_create(
            state_digest=digest,
            defaults={
                "problem": data,
                "surplus_value_w": problem.settings.throughput_value_w,
                "points_expected": len(tradeoff.sweep_grid()),
            },
        )
        if created:
            _prune_sweeps()
            transaction.on_commit(partial(_dispatch_sweep, sweep.pk), robust=True)
    return sweep


def _prune_sweeps() -> None:
    """Keep the newest SWEEPS_KEPT sweeps: each holds a whole cluster state."""
    stale = list(TradeoffSweep.objects.order_by("-created_at", "-id").values_list("pk", flat=True)[SWEEPS_KEPT:])
    TradeoffSweep.objects.filter(pk__in=stale).delete()


def _dispatch_sweep(sweep_id: int) -> None:
    from celery import group

    from .tasks import tradeoff_point

    group(tradeoff_point.s(sweep_id, setting.index) for setting in tradeoff.sweep_grid()).apply_async()


def tradeoff_point_solve(*, sweep_id: int, index: int) -> TradeoffPoint | None:
    """Solve one point of a sweep and store it; a repeated delivery finds it stored, and a
    sweep pruned meanwhile is skipped (None)."""
    sweep = TradeoffSweep.objects.filter(pk=sweep_id).first()
    if sweep is None:
        return None
    existing = sweep.points.filter(index=index).first()
    if existing is not None:
        return existing
    setting = tradeoff.sweep_grid()[index]
    problem = tradeoff.point_problem(problem_from_dict(sweep.problem), setting)
    allocation = _solve(problem)
    point = tradeoff.allocation_point(problem, allocation)
    stored, _ = TradeoffPoint.objects.get_or_create(
        sweep=sweep,
        index=index,
        defaults={
            "energy_weight": setting.energy_weight, "fairness_on": setting.fairness, "throughput": point.throughput,
            "power_w": point.power_w, "jain": point.fairness, "placed": point.placed, "status": allocation.status,
            "seconds": allocation.seconds,
        },
    )
    return stored


@dataclass(frozen=True)
class Preview:
    current: tradeoff.OperatingPoint
    proposed: tradeoff.OperatingPoint
    energy_weight: float  # effective (after the adaptive rule)
    status: str
    seconds: float
    moves: list[tradeoff.Move]
    hidden_moves: int  # moves of jobs the user may not see


def tradeoff_preview(*, user, values: dict) -> Preview:
    """A dry run: the decision a round would take now with `values` as solver settings,
    compared with where jobs are now. Nothing is stored. The moves list names only jobs the
    user may see; the totals are cluster-wide, like the Cluster page's."""
    config = SolverConfig.load()
    for field in TRADEOFF_FIELDS:
        setattr(config, field, values[field])  # not saved
    problem = problem_from_database(config)
    allocation = _solve(problem)
    moves = tradeoff.job_moves(problem, allocation)
    visible = {str(pk) for pk in jobs_visible_to(user).filter(pk__in=[int(m.job_id) for m in moves]).values_list("pk", flat=True)}
    return Preview(
        current=tradeoff.operating_point(problem.jobs, current_served()),
        proposed=tradeoff.allocation_point(problem, allocation),
        energy_weight=allocation.energy_weight,
        status=allocation.status,
        seconds=allocation.seconds,
        moves=[m for m in moves if m.job_id in visible],
        hidden_moves=sum(m.job_id not in visible for m in moves),
    )


def tradeoff_apply(*, by, values: dict) -> SolverConfig:
    """Make the previewed settings live; staff only. Every changed field is audited by
    solver_config_update (who, old and new value, when)."""
    if not by.is_staff:
        raise PermissionDenied("Only staff may change solver settings.")
    return solver_config_update(by=by, values={field: values[field] for field in TRADEOFF_FIELDS})


def sweep_current_point(sweep: TradeoffSweep) -> tradeoff.OperatingPoint:
    """Where the cluster is now (the open allocations), over the jobs of the sweep's state."""
    jobs = tuple(problem_from_dict(sweep.problem).jobs)
    return tradeoff.operating_point(jobs, current_served())
