"""A Redis cache that is away never turns a sign-in into a 500: counters fail soft."""
import socket

import pytest
from django.core.cache import cache
from django.test import override_settings

from gogh_web.cache_config import cache_config
from gogh_web.dashboard.accounts import LimitedAuthenticationForm


@pytest.fixture
def redis_away():
    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with override_settings(CACHES=cache_config(f"redis://127.0.0.1:{port}/0")):
        yield


def test_an_unreachable_cache_reads_nothing_takes_locks_and_drops_writes(redis_away):
    assert cache.get("k", "default") == "default" and cache.get_many(["k"]) == {}
    assert cache.add("lock", 1, 30) is True
    cache.set("k", 1, 30)
    cache.delete_many(["k"])
    assert cache.delete("k") is False


def test_sign_in_works_while_the_redis_cache_is_away(redis_away, django_user_model):
    django_user_model.objects.create_user("ada", password="right-password")
    wrong = LimitedAuthenticationForm(data={"username": "ada", "password": "wrong"})
    assert not wrong.is_valid() and "did not match" in str(wrong.errors)
    assert LimitedAuthenticationForm(data={"username": "ada", "password": "right-password"}).is_valid()
