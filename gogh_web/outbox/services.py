"""The transactional outbox: a Celery task that a change needs is written as a row in the same
transaction as the change, and sent to the broker once that transaction commits.

A broker that cannot be reached leaves the row where it is (logged, never raised: the change
is committed, so the request that made it must not be answered with an error), and
outbox_drain, run by Celery beat every GOGH_OUTBOX_DRAIN_S, sends it when the broker is back.
A key makes a request idempotent: while a message with that key exists, asking again adds
nothing. A message that must reach a worker, not only the broker (P1 for a job, the round
request), is kept after sending until the task acknowledges it (outbox_acknowledge); if it
never does within GOGH_OUTBOX_REDELIVER_S (the task was lost in flight, e.g. a worker killed
with the filesystem broker) the drain sends it again. Tasks sent this way may therefore run
more than once and are written to be idempotent.

Every app may use it: it knows task names, never the apps behind them.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from .models import OutboxMessage

log = logging.getLogger(__name__)
#: Messages claimed by one drain at most; the next drain takes the rest.
DRAIN_BATCH = 500


def outbox_enqueue(
    *, task: str, args: list | tuple = (), kwargs: dict | None = None, key: str | None = None,
    countdown: float = 0.0, until_acknowledged: bool = False,
) -> OutboxMessage | None:
    """Write a message in the current transaction (rolled back with it), sent once it commits.
    None when a message with this key already exists: that one covers this request too."""
    if key is not None and OutboxMessage.objects.filter(key=key).exists():
        return None
    try:
        with transaction.atomic():
            message = OutboxMessage.objects.create(
                task=task, args=list(args), kwargs=kwargs or {}, key=key, countdown=countdown,
                until_acknowledged=until_acknowledged,
            )
    except IntegrityError:
        return None  # a concurrent transaction wrote this key first
    transaction.on_commit(lambda: outbox_send(ids=[message.pk]), robust=True)
    return message


def outbox_send(*, ids: list[int]) -> int:
    """Send these messages now if nobody else is sending them: how many reached the broker."""
    return _send(_claim(OutboxMessage.objects.filter(pk__in=ids, sent_at__isnull=True)))


def outbox_drain(*, now=None) -> int:
    """Send what could not be sent (broker away) and what was sent but never acknowledged within
    GOGH_OUTBOX_REDELIVER_S; how many reached the broker. Safe to run in several processes at
    once: each message is claimed by one of them (PostgreSQL skips rows another drain holds;
    SQLite runs one writing transaction at a time)."""
    now = now or timezone.now()
    overdue = now - timedelta(seconds=settings.GOGH_OUTBOX_REDELIVER_S)
    return _send(_claim(OutboxMessage.objects.filter(Q(sent_at__isnull=True) | Q(sent_at__lt=overdue)), now=now))


def outbox_acknowledge(*, key: str) -> int:
    """The task behind `key` started (or did its work): forget the message, so that the next
    request with this key is sent again. How many messages were deleted (0 or 1)."""
    deleted, _ = OutboxMessage.objects.filter(key=key).delete()
    return deleted


def _claim(due, now=None) -> list[OutboxMessage]:
    """Mark due messages as being sent (one short transaction), so another sender skips them;
    one that is never sent (the process died) is due again after GOGH_OUTBOX_REDELIVER_S."""
    now = now or timezone.now()
    with transaction.atomic():
        messages = list(due.order_by("id").select_for_update(skip_locked=True)[:DRAIN_BATCH])
        OutboxMessage.objects.filter(pk__in=[m.pk for m in messages]).update(sent_at=now, attempts=F("attempts") + 1)
    return messages


def _send(messages: list[OutboxMessage]) -> int:
    """Publish over one broker connection; what failed is left for the drain, with the reason."""
    if not messages:
        return 0
    from gogh_web.celery import app

    sent, failed, error = [], [], ""
    try:
        with app.connection_for_write() as connection:
            # One attempt, no retries: the drain is the retry, and a request must not wait
            # seconds on a broker that is away (kombu's default retries take ~6 s to fail).
            connection.ensure_connection(max_retries=0)
            for message in messages:
                _publish(app, connection, message)
                sent.append(message)
    except Exception as exc:  # any broker or connection error: the rest stay for the drain
        error = f"{type(exc).__name__}: {exc}"[:300]
        failed = [m.pk for m in messages[len(sent):]]
        log.warning("outbox: %d of %d tasks not sent (%s); the drain sends them when the broker is back",
                    len(failed), len(messages), error)
        OutboxMessage.objects.filter(pk__in=failed).update(sent_at=None, last_error=error)
    OutboxMessage.objects.filter(pk__in=[m.pk for m in sent if not m.until_acknowledged]).delete()
    return len(sent)


def _publish(app, connection, message: OutboxMessage) -> None:
    """Hand the task to the broker, routed to its queue by CELERY_TASK_ROUTES. The countdown
    counts from the first attempt only: a message sent late is already overdue. Nobody waits
    on the result, so none is stored."""
    countdown = message.countdown if message.attempts == 0 and message.countdown else None
    app.send_task(message.task, args=message.args, kwargs=message.kwargs, countdown=countdown,
                  connection=connection, retry=False, ignore_result=True)
