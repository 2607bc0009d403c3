"""How the `cells` solver's cells get solved from the Django shell: in parallel as a Celery
group when the cluster runs distributed (a Redis or RabbitMQ broker: workers on several
machines), one after another on the embedded broker (DESIGN.md section 2).

A worker that runs the round and waits for its cells needs other workers (or a concurrency
above one) to solve them; if the group does not answer within the time limit plus a margin,
or fails, the cells are solved in turn here and the allocation notes it.
"""
import logging

from celery import group
from django.conf import settings

from gogh_web.celery_config import EMBEDDED_BROKER

from .optimizer.cells import solve_in_turn
from .optimizer.problem import Plan, Problem
from .optimizer.serialization import plan_from_dict, problem_to_dict

log = logging.getLogger(__name__)
SOLVE_CELL_TASK = "scheduler.tasks.solve_cell"
MARGIN_S = 30.0


def distributed() -> bool:
    return not settings.CELERY_BROKER_URL.startswith(EMBEDDED_BROKER)


def solve_cells(problems: list[Problem], *, app=None, parallel: bool | None = None) -> list[Plan]:
    """Plans of the cell problems, in order. `app`: the Celery app to send with (the
    project's by default); `parallel`: force the group on or off (default: when distributed)."""
    if not (distributed() if parallel is None else parallel) or len(problems) < 2:
        return solve_in_turn(problems)
    if app is None:
        from gogh_web.celery import app
    timeout = max(p.settings.time_limit_s for p in problems) + MARGIN_S
    pending = group(app.signature(SOLVE_CELL_TASK, args=(problem_to_dict(p),)) for p in problems).apply_async()
    try:
        results = pending.get(timeout=timeout, disable_sync_subtasks=False)
    except Exception as exc:  # a lost worker, a time-out, a broker error: never leave the round undecided
        log.warning("cells group failed (%r); solving the cells in turn", exc)
        pending.revoke()
        allocations = solve_in_turn(problems)
        for allocation in allocations:
            allocation.notes.append(f"Solved in turn: the Celery group failed ({exc!r}).")
        return allocations
    return [plan_from_dict(r) for r in results]
