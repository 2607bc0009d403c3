"""Fixtures shared by both tiers: people, tenants, API clients and a small catalog; and a
PostgreSQL that does not answer stops the session at once."""
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from catalog.models import GpuType, Workload
from scheduler.models import Membership, Tenant
from tests.preflight import postgres_problem


def pytest_collection(session):
    """On PostgreSQL (DATABASE_URL), a server that does not answer ends the run here with one
    line, when `make test`'s preflight was bypassed, instead of a psycopg traceback in every
    test that touches the database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        return
    auth = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@" if db["USER"] else ""
    problem = postgres_problem(f"postgres://{auth}{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}")
    if problem:
        pytest.exit(f"{problem}: run `make services` (needs root) or set DATABASE_URL", pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The user fixtures set passwords; the default hasher spends ~0.3 s on each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache: counters kept there (failed sign-ins, throttles)
    would otherwise carry over from earlier tests. Always the process's own memory, even with
    REDIS_URL exported: clearing a Redis cache empties its whole database (FLUSHDB), a broker's
    queues and the channel layer included."""
    from django.core.cache import cache
    from django.test import override_settings

    from gogh_web.cache_config import cache_config

    with override_settings(CACHES=cache_config("")):
        cache.clear()
        yield


@pytest.fixture
def default_power_limits(db):
    """Every GPU at its board's default power limit (SolverConfig.power_limits off, an operator's
    choice): for figures hand-checked at the default limit."""
    from scheduler.models import SolverConfig

    SolverConfig.objects.update_or_create(pk=SolverConfig.SINGLETON_PK, defaults={"power_limits": False})


@pytest.fixture
def make_user(db):
    """make_user('alice', tenant='research', staff=False, agent=False) -> User."""

    def make(username, tenant=None, staff=False, agent=False):
        user = get_user_model().objects.create_user(username=username, password="pw-" + username, is_staff=staff)
        if tenant:
            team, _ = Tenant.objects.get_or_create(slug=tenant, defaults={"name": tenant.title()})
            Membership.objects.create(user=user, tenant=team)
        if agent:
            user.user_permissions.add(Permission.objects.get(codename="act_as_agent"))
        return user

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice", tenant="research")


@pytest.fixture
def bob(make_user):
    return make_user("bob", tenant="vision")


@pytest.fixture
def staff(make_user):
    return make_user("operator", tenant="ops", staff=True)


@pytest.fixture
def agent(make_user):
    return make_user("agent-node1", agent=True)


@pytest.fixture
def client_for():
    """client_for(user) -> APIClient authenticated with the user's token (None: anonymous)."""

    def make(user=None):
        client = APIClient()
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def v100(db):
    return GpuType.objects.create(name="v100", memory_gb=16, tdp_w=300, idle_w=35, power_curve=[[0, 35], [1, 300]])


@pytest.fixture
def k80(db):
    return GpuType.objects.create(name="k80", memory_gb=12, tdp_w=150, idle_w=25, power_curve=[[0, 25], [1, 150]])


@pytest.fixture
def resnet50(db):
    return Workload.objects.create(name="ResNet-50 (batch size 64)", family="ResNet-50", batch_size=64)


@pytest.fixture
def lm(db):
    return Workload.objects.create(name="LM (batch size 20)", family="LM", batch_size=20)
