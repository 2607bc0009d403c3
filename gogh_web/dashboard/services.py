"""Writes and solves behind the Trade-off page: the sweep (cached per cluster state, its
points solved by Celery tasks), the preview (a dry-run solve with proposed settings) and
apply (staff only, through scheduler.services.solver_config_update, which audits it)."""
import logging
import math
import time
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from gogh_web.outbox.services import outbox_enqueue
from scheduler import optimizer
from scheduler.models import SolverConfig
from scheduler.optimizer import Plan, Problem
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict
from scheduler.problem_source import problem_from_database
from scheduler.services import solver_config_update

from . import selectors, tradeoff
from .models import TradeoffPoint, TradeoffSweep

log = logging.getLogger(__name__)
TRADEOFF_FIELDS = selectors.TRADEOFF_FIELDS
SWEEPS_KEPT = 20
FAILED_POINT = selectors.FAILED_POINT
# The preview solves in the web request (a sync view: under daphne it holds a shared thread),
# so it gets at most this time limit whatever the rounds' time_limit_s (up to 3600 s) is.
PREVIEW_TIME_LIMIT_S = 2.0


def _solve(problem: Problem) -> Plan:
    """The configured solver in this process (`cells` solves its cells in turn here)."""
    return optimizer.get_solver(problem.settings.solver).solve(problem)


def _sweep_problem() -> Problem:
    config = SolverConfig.load()
    config.throughput_value_w = tradeoff.surplus_value_w(config.throughput_value_w)  # not saved
    return problem_from_database(config)


def tradeoff_sweep_for_current_state() -> tuple[TradeoffSweep, bool]:
    """(sweep, created): the sweep of the cluster as it is now: the cached one when the state
    digest is known, else a new one whose points go to the workers as one Celery group once it
    commits. A cached sweep that failed (a point raised, or points were lost: a failed dispatch,
    a lost task) is replaced by a new one, so asking again retries it; its late points are
    skipped."""
    problem = _sweep_problem()
    data = problem_to_dict(problem)
    digest = tradeoff.state_digest(data)
    with transaction.atomic():
        stale = TradeoffSweep.objects.filter(state_digest=digest).first()
        if stale is not None and selectors.sweep_status(stale) == tradeoff.FAILED:
            stale.delete()
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
            _dispatch_sweep(sweep.pk)
    return sweep, created


def _prune_sweeps() -> None:
    """Keep the newest SWEEPS_KEPT sweeps: each holds a whole cluster state."""
    stale = list(TradeoffSweep.objects.order_by("-created_at", "-id").values_list("pk", flat=True)[SWEEPS_KEPT:])
    TradeoffSweep.objects.filter(pk__in=stale).delete()


def _dispatch_sweep(sweep_id: int) -> None:
    """One task per point, written to the outbox with the sweep and sent once it commits."""
    for setting in tradeoff.sweep_grid():
        outbox_enqueue(task="gogh_web.dashboard.tasks.tradeoff_point", args=[sweep_id, setting.index])


def tradeoff_point_solve(*, sweep_id: int, index: int) -> TradeoffPoint | None:
    """Solve one point of a sweep and store it; a repeated delivery finds it stored, and a
    sweep pruned (or replaced) meanwhile is skipped (None), also when that happens during the
    solve. A point whose solve raises is stored as failed (status FAILED_POINT, zero totals),
    so the sweep ends as failed instead of waiting for it forever."""
    sweep = TradeoffSweep.objects.filter(pk=sweep_id).first()
    if sweep is None:
        return None
    existing = sweep.points.filter(index=index).first()
    if existing is not None:
        return existing
    setting = tradeoff.sweep_grid()[index]
    started = time.monotonic()
    try:
        problem = tradeoff.point_problem(problem_from_dict(sweep.problem), setting)
        allocation = _solve(problem)
        point = tradeoff.allocation_point(problem, allocation)
        values = {"throughput": point.throughput, "power_w": point.power_w, "jain": point.fairness,
                  "placed": point.placed, "status": allocation.status, "seconds": allocation.seconds}
        if not all(math.isfinite(values[k]) for k in ("throughput", "power_w", "jain")):
            raise ValueError(f"not a finite operating point: {values}")  # a NaN would fail the insert
    except Exception:
        log.exception("trade-off sweep %s: point %s failed", sweep_id, index)
        values = {"throughput": 0.0, "power_w": 0.0, "jain": 0.0, "placed": 0, "status": FAILED_POINT,
                  "seconds": time.monotonic() - started}
    return _store_point(
        sweep_id, index, {"energy_weight": setting.energy_weight, "fairness_weight": setting.fairness_weight, **values}
    )


def _store_point(sweep_id: int, index: int, values: dict) -> TradeoffPoint | None:
    """Store a point unless its sweep is gone: the sweep row is locked while the point is
    written, so a prune cannot delete it in between (PostgreSQL); a foreign-key error from a
    delete that got in anyway still means "pruned"."""
    try:
        with transaction.atomic():
            if not list(TradeoffSweep.objects.select_for_update().filter(pk=sweep_id).values_list("pk", flat=True)):
                return None
            stored, _ = TradeoffPoint.objects.get_or_create(sweep_id=sweep_id, index=index, defaults=values)
    except IntegrityError:
        if TradeoffSweep.objects.filter(pk=sweep_id).exists():
            raise
        return None
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
    hidden_change: tuple[float, float]  # what those moves change in total: (steps/s, W)


def tradeoff_preview(*, user, values: dict) -> Preview:
    """A dry run: the decision a round would take now with `values` as solver settings,
    compared with where jobs are now, both by the same problem and so the same predictions
    (tradeoff.current_point): every difference between the two points is a listed change. Nothing
    is stored. The list names only jobs the user may see; the others are counted, with their
    total change; the totals are cluster-wide, like the Cluster page's."""
    config = SolverConfig.load()
    for field, value in values.items():
        setattr(config, field, value)  # not saved; the fields not given keep their stored value
    config.time_limit_s = min(config.time_limit_s, PREVIEW_TIME_LIMIT_S)
    problem = problem_from_database(config)
    allocation = _solve(problem)
    moves = tradeoff.job_moves(problem, allocation)
    visible = selectors.visible_job_ids(user, [m.job_id for m in moves])
    hidden = [m for m in moves if m.job_id not in visible]
    return Preview(
        current=tradeoff.current_point(problem),
        proposed=tradeoff.allocation_point(problem, allocation),
        energy_weight=allocation.energy_weight,
        status=allocation.status,
        seconds=allocation.seconds,
        moves=[m for m in moves if m.job_id in visible],
        hidden_moves=len(hidden),
        hidden_change=tuple(sum(m.to_served[i] - m.from_served[i] for m in hidden) for i in (0, 1)),
    )


def tradeoff_apply(*, by, values: dict) -> SolverConfig:
    """Make the given settings live (the page sends only the fields the user changed); staff
    only. Every changed field is audited by solver_config_update (who, old and new value, when)."""
    if not by.is_staff:
        raise PermissionDenied("Only staff may change solver settings.")
    return solver_config_update(by=by, values={field: values[field] for field in TRADEOFF_FIELDS if field in values})

