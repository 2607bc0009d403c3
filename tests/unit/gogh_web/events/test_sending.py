"""send_event: events exist only for committed changes, carry the committed truth, in order."""
import pytest
from django.db import transaction

from gogh_web.events import send_event, send_events
from gogh_web.events.models import Event
from scheduler import services


def test_an_event_is_stored_only_when_the_transaction_commits(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            send_event(kind="node", key=1, data={"id": 1})
            assert not Event.objects.exists()  # not before the commit
    event = Event.objects.get()
    assert (event.kind, event.key, event.op, event.data, event.tenant_id) == ("node", "1", "upsert", {"id": 1}, None)


def test_a_rolled_back_change_emits_nothing(db, alice, resnet50, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1)
            raise RuntimeError("the caller's transaction fails after the service")
    assert not Event.objects.exists()


def test_data_is_read_after_the_commit_and_none_means_delete(db, django_capture_on_commit_callbacks):
    seen = {"value": 1}
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            send_event(kind="gpu", key=5, data=lambda: dict(seen))
            seen["value"] = 2  # changed later in the same transaction
        send_event(kind="gpu", key=6, data=lambda: None)
    first, gone = Event.objects.order_by("id")
    assert first.data == {"value": 2}
    assert (gone.op, gone.data) == ("delete", None)


def test_events_are_numbered_in_commit_order(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for key in range(3):
            with transaction.atomic():
                send_event(kind="node", key=key, data={"id": key})
    assert list(Event.objects.order_by("id").values_list("key", flat=True)) == ["0", "1", "2"]


def test_send_events_stores_a_batch_together_and_deletes_what_the_builder_left_out(db,
                                                                                  django_capture_on_commit_callbacks):
    asked = []

    def build(keys):
        asked.append(keys)
        return {"1": {"id": 1}}

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        send_events(kind="gpu", keys=[1, 2], data=build)
    assert len(callbacks) == 1 and asked == [["1", "2"]]  # one build for the whole batch
    assert list(Event.objects.order_by("id").values_list("key", "op", "data")) == [
        ("1", "upsert", {"id": 1}),
        ("2", "delete", None),
    ]


def _failing(monkeypatch, times: int):
    """The next `times` stores fail as SQLite does when another writer holds the database too long."""
    from django.db import OperationalError

    from gogh_web.events import sending

    real, calls = sending._lock_events, {"n": 0}

    def lock(table):
        calls["n"] += 1
        if calls["n"] <= times:
            raise OperationalError("database is locked")
        real(table)

    monkeypatch.setattr(sending, "_lock_events", lock)


def test_a_failed_store_is_retried_once(db, monkeypatch, django_capture_on_commit_callbacks):
    _failing(monkeypatch, times=1)
    with django_capture_on_commit_callbacks(execute=True):
        send_event(kind="node", key=1, data={"id": 1})
    assert list(Event.objects.values_list("kind", "key")) == [("node", "1")]


def test_events_lost_twice_leave_a_resync_marker(db, monkeypatch, django_capture_on_commit_callbacks):
    _failing(monkeypatch, times=2)
    with django_capture_on_commit_callbacks(execute=True):
        send_event(kind="node", key=1, data={"id": 1})
    assert list(Event.objects.values_list("kind", "tenant_id")) == [("resync", None)]  # every page sees it


def test_a_marker_that_could_not_be_stored_goes_first_with_the_next_events(db, monkeypatch,
                                                                           django_capture_on_commit_callbacks):
    _failing(monkeypatch, times=3)  # the event, its retry and the marker
    with django_capture_on_commit_callbacks(execute=True):
        send_event(kind="node", key=1, data={"id": 1})
    assert not Event.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        send_event(kind="node", key=2, data={"id": 2})
        send_event(kind="node", key=3, data={"id": 3})
    assert list(Event.objects.order_by("id").values_list("kind", "key")) == [
        ("resync", ""),
        ("node", "2"),
        ("node", "3"),
    ]
