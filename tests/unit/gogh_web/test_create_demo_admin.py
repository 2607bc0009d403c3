"""manage.py create_demo_admin: a staff member of tenant demo whose printed login opens the
admin and the console, and whose printed token calls the API; the same on every run."""
import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

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
