"""The transactional outbox: a task is written with the change that needs it, sent once that
commits, kept while the broker is away and sent by the drain when it is back; one message per
key; a message kept until acknowledged is sent again when it never is."""
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from gogh_web.outbox.models import OutboxMessage
from gogh_web.outbox.services import outbox_acknowledge, outbox_drain, outbox_enqueue

from .broker import broker as broker  # a fixture, `as` marks it re-exported

TASK = "gogh_web.events.tasks.events_prune"


def test_a_message_is_sent_once_its_transaction_commits_then_forgotten(db, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            outbox_enqueue(task=TASK, args=[7], kwargs={"why": "test"}, countdown=2.0)
            assert OutboxMessage.objects.count() == 1 and broker.sent == []  # written with the change, not sent yet
    assert broker.sent == [(TASK, [7], {"why": "test"}, 2.0)]
    assert not OutboxMessage.objects.exists()


def test_a_rolled_back_change_writes_and_sends_nothing(db, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            outbox_enqueue(task=TASK)
            raise RuntimeError("the change failed")
    assert broker.sent == [] and not OutboxMessage.objects.exists()


def test_while_the_broker_is_away_the_message_waits_for_the_drain(db, broker, django_capture_on_commit_callbacks):
    broker.away = True
    with django_capture_on_commit_callbacks(execute=True):
        outbox_enqueue(task=TASK, args=[1])  # raises nothing: the change is committed
    waiting = OutboxMessage.objects.get()
    assert waiting.sent_at is None and waiting.attempts == 1 and "Connection refused" in waiting.last_error
    assert outbox_drain() == 0 and OutboxMessage.objects.get().attempts == 2
    broker.away = False
    assert outbox_drain() == 1
    assert broker.sent == [(TASK, [1], {}, None)] and not OutboxMessage.objects.exists()
    assert outbox_drain() == 0 and len(broker.sent) == 1


def test_one_message_per_key_until_it_is_acknowledged(db, broker, django_capture_on_commit_callbacks):
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            outbox_enqueue(task=TASK, key="once", until_acknowledged=True)
    assert len(broker.sent) == 1
    kept = OutboxMessage.objects.get()
    assert kept.key == "once" and kept.sent_at is not None  # sent, kept until the task says so
    assert outbox_drain() == 0  # sent recently: not sent again
    assert outbox_acknowledge(key="once") == 1 and not OutboxMessage.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox_enqueue(task=TASK, key="once", until_acknowledged=True) is not None
    assert len(broker.sent) == 2


def test_a_message_never_acknowledged_is_sent_again_after_the_redelivery_delay(db, broker, settings,
                                                                               django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        outbox_enqueue(task=TASK, args=[3], key="p1", countdown=2.0, until_acknowledged=True)
    later = timezone.now() + timedelta(seconds=settings.GOGH_OUTBOX_REDELIVER_S)
    assert outbox_drain(now=later - timedelta(seconds=5)) == 0
    assert outbox_drain(now=later + timedelta(seconds=5)) == 1
    assert broker.of(TASK) == [([3], {}, 2.0), ([3], {}, None)]  # sent late: no countdown again
    assert OutboxMessage.objects.get().attempts == 2


@pytest.mark.django_db(transaction=True)
def test_drains_running_at_once_send_each_message_once(broker):
    """Several beat-driven drains (or a drain beside a request's own send) never send a message
    twice: PostgreSQL skips the rows another holds, SQLite serialises the writers."""
    broker.away = True
    for number in range(60):
        outbox_enqueue(task=TASK, args=[number])  # committed at once (autocommit), sending fails
    broker.away = False
    start = threading.Barrier(3)

    def drain():
        try:
            start.wait()
            outbox_drain()
        finally:
            connection.close()

    threads = [threading.Thread(target=drain) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(args[0] for args, _, _ in broker.of(TASK)) == list(range(60))
    assert not OutboxMessage.objects.exists()
