"""Celery tasks of the outbox: one more way in to its services, nothing else."""
from celery import shared_task

from . import services


@shared_task(name="gogh_web.outbox.tasks.outbox_drain")
def outbox_drain() -> int:
    """Run by Celery beat every GOGH_OUTBOX_DRAIN_S: send what the broker missed; how many were sent."""
    return services.outbox_drain()
