"""Celery tasks of the event stream: one more way in to its services, nothing else."""
from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="gogh_web.events.tasks.events_prune")
def events_prune() -> int:
    """Run by Celery beat: delete events older than GOGH_LIVE_EVENT_RETENTION_S."""
    return services.events_prune(retention_s=settings.GOGH_LIVE_EVENT_RETENTION_S)
