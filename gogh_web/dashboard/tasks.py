"""Celery tasks of the dashboard: one more way in to its services, nothing else."""
from celery import shared_task

from . import services


@shared_task(name="gogh_web.dashboard.tasks.tradeoff_point")
def tradeoff_point(sweep_id: int, index: int) -> int | None:
    """One point of a trade-off sweep (sent as a group, one task per point): the point's id,
    None when the sweep was pruned before the point was solved."""
    point = services.tradeoff_point_solve(sweep_id=sweep_id, index=index)
    return point.pk if point is not None else None
