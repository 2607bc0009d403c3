"""With REDIS_URL, Django's cache is shared by every process: failed sign-ins counted by one
web process make the next attempt from the same place wait in another (in each process's own
memory they would not)."""
import subprocess
import sys

import pytest
from django.core.cache import cache
from django.test import override_settings

from gogh_web.cache_config import cache_config
from gogh_web.dashboard import accounts
from gogh_web.dashboard.accounts import LimitedAuthenticationForm, SignInAttempt

from .conftest import REDIS_URL, ROOT, process_env, test_database_url

CLOCK = 4_000_000_000.0
FAIL_IN_ANOTHER_PROCESS = f"CLOCK = {CLOCK}\n" + """
import django
django.setup()
from gogh_web.dashboard import accounts
accounts.clock = lambda: CLOCK  # both processes at one instant: the wait seen here is exactly the first
for _ in range(accounts.PER_PAIR.free):
    assert not accounts.LimitedAuthenticationForm(data={"username": "ada", "password": "wrong"}).is_valid()
"""


def _fail_elsewhere(tmp_path, **env):
    var = tmp_path / "var"
    var.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", FAIL_IN_ANOTHER_PROCESS], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=process_env(var, test_database_url(),
                                                       DJANGO_SETTINGS_MODULE="gogh_web.settings", **env))
    assert done.returncode == 0, done.stderr


def _right_password_accepted() -> bool:
    form = LimitedAuthenticationForm(data={"username": "ada", "password": "right-password"})
    valid = form.is_valid()
    assert valid or "try again in 1 s" in str(form.errors)
    return valid


@pytest.fixture
def ada(transactional_db, django_user_model):
    return django_user_model.objects.create_user("ada", password="right-password")


@pytest.fixture
def shared_cache(monkeypatch):
    monkeypatch.setattr(accounts, "clock", lambda: CLOCK)
    with override_settings(CACHES=cache_config(REDIS_URL)):
        keys = [key for _, key in SignInAttempt.of("ada", None).counts] + [accounts._key("known", "ada", "")]
        cache.delete_many(keys)
        yield
        cache.delete_many(keys)


def test_failures_in_another_process_slow_the_next_attempt_through_redis(ada, shared_cache, tmp_path):
    _fail_elsewhere(tmp_path, REDIS_URL="")  # that process counts in its own memory: nothing here knows
    assert _right_password_accepted()
    _fail_elsewhere(tmp_path, REDIS_URL=REDIS_URL)  # the cluster's Redis: every process sees the count
    assert not _right_password_accepted()
