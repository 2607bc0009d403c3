"""API tokens expire (GOGH_API_TOKEN_TTL_DAYS; agents GOGH_AGENT_TOKEN_TTL_DAYS, never by
default) and can be replaced: POST /api/auth/token/rotate/, `manage.py rotate_token USER`;
create_demo_admin and create_agent_token never hand out an expired token."""
import io
import re
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from telemetry.agent.agent import Agent, RegistrationRefused
from telemetry.agent.client import ControlPlane
from telemetry.agent.config import AgentConfig
from telemetry.agent.nvml import NvmlBackend

from ..telemetry.fake_nvml import fake_nvml

ROTATE = "/api/auth/token/rotate/"

pytestmark = pytest.mark.django_db


def token_made(user, days_ago: float) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(days=days_ago))
    return token.key


def jobs_with(key):
    return Client().get("/api/jobs/", HTTP_AUTHORIZATION=f"Token {key}")


def test_a_persons_token_is_refused_after_its_ttl_and_says_how_to_get_another(alice, settings):
    settings.GOGH_API_TOKEN_TTL_DAYS = 30
    assert jobs_with(token_made(alice, 29)).status_code == 200
    refused = jobs_with(token_made(alice, 31))
    assert refused.status_code == 401
    detail = refused.json()["detail"]
    assert "expired on" in detail and ROTATE in detail and "rotate_token" in detail


def test_a_ttl_of_zero_never_expires(alice, settings):
    settings.GOGH_API_TOKEN_TTL_DAYS = 0
    assert jobs_with(token_made(alice, 3650)).status_code == 200


def test_an_agents_token_never_expires_by_default_and_its_own_ttl_names_the_fix(agent, settings):
    assert settings.GOGH_AGENT_TOKEN_TTL_DAYS == 0
    key = token_made(agent, 400)
    assert Client().get("/api/nodes/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    settings.GOGH_AGENT_TOKEN_TTL_DAYS = 365
    refused = Client().get("/api/nodes/", HTTP_AUTHORIZATION=f"Token {key}")
    assert refused.status_code == 401
    assert f"create_agent_token {agent.username} --rotate" in refused.json()["detail"]


def test_an_agent_with_an_expired_token_says_so(agent, settings, live_server, tmp_path):
    """The agent stops with the control plane's reason (cli.py logs it and exits 4)."""
    settings.GOGH_AGENT_TOKEN_TTL_DAYS = 1
    client = ControlPlane(live_server.url, token_made(agent, 2), timeout=10)
    config = AgentConfig(hostname="gpu-node-1", log_dir=tmp_path / "logs", retry_s=0.2)
    with pytest.raises(RegistrationRefused, match=r"HTTP 401.*expired on .*create_agent_token agent-node1 --rotate"):
        Agent(backend=NvmlBackend(nvml=fake_nvml(count=1)), client=client, config=config).run()


def test_a_signed_in_person_rotates_their_own_token(alice):
    old = token_made(alice, 1)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    browser.get("/dashboard/")  # the CSRF cookie, as the console's pages set it
    csrf = browser.cookies["csrftoken"].value
    response = browser.post(ROTATE, {}, content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200
    new = response.json()["token"]
    assert new != old and response.json()["expires_at"]
    assert jobs_with(old).status_code == 401 and jobs_with(new).status_code == 200


def test_a_working_token_rotates_itself(alice):
    old = token_made(alice, 1)
    response = Client().post(ROTATE, HTTP_AUTHORIZATION=f"Token {old}")
    assert response.status_code == 200 and jobs_with(response.json()["token"]).status_code == 200


@pytest.mark.parametrize("who", ["anonymous", "expired", "no-csrf", "agent"])
def test_rotation_refused_changes_nothing(alice, agent, settings, who):
    settings.GOGH_API_TOKEN_TTL_DAYS = 30
    keys = {alice.pk: token_made(alice, 31 if who == "expired" else 1), agent.pk: token_made(agent, 1)}
    browser = Client(enforce_csrf_checks=True)
    if who == "expired":
        response = browser.post(ROTATE, HTTP_AUTHORIZATION=f"Token {keys[alice.pk]}")
    elif who == "agent":
        response = browser.post(ROTATE, HTTP_AUTHORIZATION=f"Token {keys[agent.pk]}")
    else:
        if who == "no-csrf":
            browser.force_login(alice)
        response = browser.post(ROTATE)
    assert response.status_code in {401, 403}
    assert {token.user_id: token.key for token in Token.objects.all()} == keys


def test_rotate_token_command_prints_a_new_token(alice):
    old = token_made(alice, 1)
    out = io.StringIO()
    call_command("rotate_token", "alice", stdout=out, stderr=io.StringIO())
    new = out.getvalue().strip()
    assert re.fullmatch(r"[0-9a-f]{40}", new) and new != old
    assert jobs_with(new).status_code == 200 and jobs_with(old).status_code == 401


@pytest.mark.parametrize("name", ["nobody", "gone"])
def test_rotate_token_command_refuses_unknown_and_deactivated_accounts(make_user, name):
    gone = make_user("gone")
    gone.is_active = False
    gone.save()
    old = token_made(gone, 1)
    with pytest.raises(CommandError, match="no account named 'nobody'" if name == "nobody" else "deactivated"):
        call_command("rotate_token", name, stdout=io.StringIO(), stderr=io.StringIO())
    assert list(Token.objects.values_list("key", flat=True)) == [old]


def test_create_demo_admin_replaces_an_expired_token(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("create_demo_admin", stdout=io.StringIO())
    Token.objects.update(created=timezone.now() - timedelta(days=settings.GOGH_API_TOKEN_TTL_DAYS + 1))
    out = io.StringIO()
    call_command("create_demo_admin", stdout=out)
    printed = re.search(r"Token:\s+(\w+)", out.getvalue()).group(1)
    assert jobs_with(printed).status_code == 200


def test_create_agent_token_replaces_an_expired_token(settings):
    settings.GOGH_AGENT_TOKEN_TTL_DAYS = 7
    first = io.StringIO()
    call_command("create_agent_token", "agent-gpu-07", stdout=first)
    Token.objects.update(created=timezone.now() - timedelta(days=8))
    again = io.StringIO()
    call_command("create_agent_token", "agent-gpu-07", stdout=again)
    key = again.getvalue().strip()
    assert key != first.getvalue().strip()
    assert Client().get("/api/nodes/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
