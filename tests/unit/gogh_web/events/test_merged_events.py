"""GPU events of concurrent uploads merged (sending.send_events_merged): threads that ask while
another stores wait for one turn that stores all their keys, built after they asked."""
import threading

import pytest

from gogh_web.events import sending


class Recorder:
    """Stands for _store_and_notify: records each turn's keys; the first turn blocks until let go."""

    def __init__(self):
        self.turns: list[list[str]] = []
        self.first_turn_started = threading.Event()
        self.let_go = threading.Event()

    def __call__(self, build):
        keys = [change.key for change in build()]
        self.turns.append(keys)
        if len(self.turns) == 1:
            self.first_turn_started.set()
            assert self.let_go.wait(60)


@pytest.fixture
def recorder(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(sending, "_store_and_notify", recorder)
    return recorder


def data(keys):
    return {key: {"id": key} for key in keys}


def test_keys_asked_while_a_turn_runs_are_stored_together_in_the_next_turn(recorder):
    merger = sending._Merger("gpu", data)
    first = threading.Thread(target=merger.send, args=({"1", "2"},))
    first.start()
    assert recorder.first_turn_started.wait(60)
    waiting = [threading.Thread(target=merger.send, args=(keys,)) for keys in ({"2", "3"}, {"4"}, {"5"})]
    for thread in waiting:
        thread.start()
    while merger._asked < 4:  # all three have added their keys and wait for their turn
        threading.Event().wait(0.01)
    recorder.let_go.set()
    for thread in [first, *waiting]:
        thread.join(60)
    assert recorder.turns == [["1", "2"], ["2", "3", "4", "5"]]  # four calls, two turns
    assert not merger._pending


def test_alone_every_call_is_its_own_turn(recorder):
    recorder.let_go.set()
    merger = sending._Merger("gpu", data)
    merger.send({"1"})
    merger.send({"1"})
    assert recorder.turns == [["1"], ["1"]]


def test_merged_events_are_sent_after_the_commit_only(recorder, db, django_capture_on_commit_callbacks):
    recorder.let_go.set()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sending.send_events_merged(kind="gpu-test", keys=[3, 1], data=data)
    assert recorder.turns == []
    for callback in callbacks:
        callback()
    assert recorder.turns == [["1", "3"]]
