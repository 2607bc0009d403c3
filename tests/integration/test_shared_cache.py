"""With REDIS_URL, Django's cache is shared by every process: failed sign-ins counted by one
web process lock the account in another (in each process's own memory they would not)."""
import subprocess
import sys

import pytest
from django.core.cache import cache
from django.test import override_settings

from gogh_web.cache_config import cache_config
from gogh_web.dashboard.accounts import LimitedAuthenticationForm, _counters

from .conftest import REDIS_URL, ROOT, process_env, test_database_url

FAIL_IN_ANOTHER_PROCESS = """
import django
django.setup()
from gogh_web.dashboard.accounts import MAX_FAILURES_PER_ACCOUNT, LimitedAuthenticationForm
for _ in range(MAX_FAILURES_PER_ACCOUNT):
    assert not LimitedAuthenticationForm(data={"username": "ada", "password": "wrong"}).is_valid()
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
    assert valid or "Too many failed sign-ins" in str(form.errors)
    return valid


@pytest.fixture
def ada(transactional_db, django_user_model):
    return django_user_model.objects.create_user("ada", password="right-password")


@pytest.fixture
def shared_cache():
    with override_settings(CACHES=cache_config(REDIS_URL)):
        keys = [key for key, _ in _counters("ada", None)]
        cache.delete_many(keys)
        yield
        cache.delete_many(keys)


def test_failures_in_another_process_lock_the_account_through_redis(ada, shared_cache, tmp_path):
    _fail_elsewhere(tmp_path, REDIS_URL="")  # that process counts in its own memory: nothing here knows
    assert _right_password_accepted()
    _fail_elsewhere(tmp_path, REDIS_URL=REDIS_URL)  # the cluster's Redis: every process sees the count
    assert not _right_password_accepted()
