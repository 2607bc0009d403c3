"""manage.py create_demo_admin: a staff member of tenant demo whose printed login opens the
admin and the console, and whose printed token calls the API; the same on every run."""
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from scheduler.models import Membership

pytestmark = pytest.mark.django_db


def run():
    out = io.StringIO()
    call_command("create_demo_admin", stdout=out)
    return out.getvalue()


def test_printed_login_and_token_work_and_stay_the_same(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    first = run()
    password = re.search(r"user admin\s+password (\S+)", first).group(1)
    token = re.search(r"Token:\s+(\w+)", first).group(1)
    assert "http://127.0.0.1:8000/dashboard/" in first
    browser = Client()
    assert browser.login(username="admin", password=password)
    assert browser.get("/dashboard/").status_code == 200
    api = browser.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token {token}")
    assert api.status_code == 200
    assert run() == first


def test_an_existing_account_that_is_not_an_administrator_is_refused(settings, tmp_path):
    """Printed with its token and moved into tenant demo, a tenant's user (or an agent) would
    pass for the demo's administrator."""
    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_user("agent-probe", password=None)
    with pytest.raises(CommandError, match="'agent-probe' is an existing account that is neither staff nor superuser"):
        call_command("create_demo_admin", "--username", "agent-probe", stdout=io.StringIO())
    assert not Membership.objects.filter(user__username="agent-probe").exists()
    assert not Token.objects.filter(user__username="agent-probe").exists()


def test_an_existing_staff_account_is_shown_again(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_user("ops", password="own-pass-123", is_staff=True)
    out = io.StringIO()
    call_command("create_demo_admin", "--username", "ops", stdout=out)
    assert "user ops   password (changed since; not shown)" in out.getvalue()


@pytest.mark.parametrize("name", ["bad name/../x", "", "a" * 151])
def test_an_invalid_name_is_refused_and_nothing_is_made(settings, tmp_path, name):
    settings.VAR_DIR = tmp_path
    with pytest.raises(CommandError, match="is not a valid account name"):
        call_command("create_demo_admin", "--username", name, stdout=io.StringIO())
    assert not get_user_model().objects.exists()
