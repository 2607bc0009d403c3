"""The broker's edge for unit tests: what the outbox published, and whether the broker can be
reached (a real outage is tests/integration/test_broker_outage.py)."""
import pytest
from kombu.exceptions import OperationalError

from gogh_web.celery import app


class Broker:
    def __init__(self):
        self.sent, self.away = [], False

    def send_task(self, name, args=None, kwargs=None, countdown=None, **options):
        if self.away:
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.sent.append((name, list(args or ()), dict(kwargs or {}), countdown))

    def of(self, task: str) -> list:
        """(args, kwargs, countdown) of each message of one task, in order."""
        return [(args, kwargs, countdown) for name, args, kwargs, countdown in self.sent if name == task]


@pytest.fixture
def broker(monkeypatch):
    """Every task the project sends (Task.delay and the outbox alike end in app.send_task) is
    recorded here instead of reaching the filesystem broker."""
    fake = Broker()
    monkeypatch.setattr(app, "send_task", fake.send_task)
    return fake
