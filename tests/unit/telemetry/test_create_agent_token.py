"""manage.py create_agent_token: an agent account and its token in one command."""
import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from catalog.models import Workload
from scheduler.models import Membership, Tenant
from scheduler.services import job_submit
from telemetry.services.nodes import AGENT_PERMISSION

pytestmark = pytest.mark.django_db


def _token(name: str) -> str:
    out = io.StringIO()
    call_command("create_agent_token", name, stdout=out)
    return out.getvalue().strip()


def test_token_signs_in_an_agent_that_may_register_and_is_stable():
    token = _token("agent-node-07")
    user = get_user_model().objects.get(username="agent-node-07")
    assert user.has_perm(AGENT_PERMISSION) and not user.has_usable_password() and not user.is_staff
    assert _token("agent-node-07") == token
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    # the agent may read the GPU types (what a simulated agent asks first) but no tenant's jobs
    tenant = Tenant.objects.create(slug="t", name="T")
    owner = get_user_model().objects.create_user("bob", password="s3cret-pass")
    Membership.objects.create(user=owner, tenant=tenant)
    job_submit(owner=owner, workload=Workload.objects.create(name="W", family="F"), min_throughput=1, max_gpus=1)
    assert client.get("/api/gpu-types/").status_code == 200
    assert client.get("/api/jobs/").json()["count"] == 0


def test_rotate_replaces_the_token_and_the_old_one_stops_working():
    old = _token("agent-node-08")
    out = io.StringIO()
    call_command("create_agent_token", "agent-node-08", "--rotate", stdout=out)
    new = out.getvalue().strip()
    assert new and new != old
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert client.get("/api/gpu-types/").status_code == 401


def test_superusers_deactivated_accounts_and_too_long_names_are_refused():
    get_user_model().objects.create_superuser("root-agent", password=None)
    with pytest.raises(CommandError, match="person's account"):
        _token("root-agent")
    _token("agent-node-09")
    get_user_model().objects.filter(username="agent-node-09").update(is_active=False)
    with pytest.raises(CommandError, match="deactivated"):
        _token("agent-node-09")
    with pytest.raises(CommandError, match="at most 150 characters"):
        _token("a" * 151)


def test_a_persons_account_is_not_turned_into_an_agent():
    get_user_model().objects.create_user("alice", password="s3cret-pass")
    with pytest.raises(CommandError, match="person's account"):
        _token("alice")
    assert not get_user_model().objects.get(username="alice").has_perm(AGENT_PERMISSION)


def test_invalid_name_is_refused_with_the_reason():
    with pytest.raises(CommandError, match="not a valid account name"):
        _token("node 7/agent")
    assert not get_user_model().objects.filter(username="node 7/agent").exists()


def test_a_tenants_api_only_account_is_not_turned_into_an_agent():
    """No usable password (API-only or SSO) but a tenant's: made an agent, it would hold the
    agent permission and keep its tenant's jobs."""
    user = get_user_model().objects.create_user("ci-bot", password=None)
    Membership.objects.create(user=user, tenant=Tenant.objects.create(slug="acme", name="Acme"))
    token = Token.objects.create(user=user).key
    with pytest.raises(CommandError, match="'ci-bot' is an account of tenant 'acme'"):
        call_command("create_agent_token", "ci-bot", "--rotate", stdout=io.StringIO())
    user = get_user_model().objects.get(username="ci-bot")
    assert not user.has_perm(AGENT_PERMISSION)
    assert Token.objects.get(user=user).key == token  # --rotate on a refused account changes nothing


def test_an_existing_account_without_the_agent_permission_is_refused():
    get_user_model().objects.create_user("node-7", password=None)
    with pytest.raises(CommandError, match="without the agent permission"):
        _token("node-7")
    assert not get_user_model().objects.get(username="node-7").has_perm(AGENT_PERMISSION)
    assert not Token.objects.filter(user__username="node-7").exists()


def test_an_agent_holding_the_permission_through_a_group_is_an_agent():
    app_label, codename = AGENT_PERMISSION.split(".")
    agents = Group.objects.create(name="agents")
    agents.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    user = get_user_model().objects.create_user("node-8", password=None)
    user.groups.add(agents)
    assert _token("node-8") == Token.objects.get(user=user).key
