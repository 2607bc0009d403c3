"""Writes of the event stream besides emission: pruning what pages no longer need."""
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from .models import Event


@transaction.atomic
def events_prune(*, retention_s: float, now=None) -> int:
    """Delete events older than `retention_s`, always keeping the newest one (it tells a
    reconnecting page whether what it missed is still here); how many were deleted. A page
    that was away longer than the retention is told to resync from a snapshot."""
    now = now or timezone.now()
    newest = Event.objects.order_by("-id").values_list("id", flat=True).first()
    if newest is None:
        return 0
    deleted, _ = Event.objects.filter(created_at__lt=now - timedelta(seconds=retention_s), id__lt=newest).delete()
    return deleted
