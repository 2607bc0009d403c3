"""API tokens that expire: DRF's tokens are valid until someone deletes them, so a token
copied into a script or a leaked shell history worked forever.

A person's token is refused GOGH_API_TOKEN_TTL_DAYS after it was made; they get a new one
from POST /api/auth/token/rotate/ (signed in on the console) or from an operator
(`manage.py rotate_token USER`). A node agent's token follows GOGH_AGENT_TOKEN_TTL_DAYS,
never by default: an agent runs unattended, and an expired token takes its node out of the
cluster; operators replace it with `manage.py create_agent_token NAME --rotate`. Either way
the 401 says which token expired, when, and how to get a new one, and the agent writes that
refusal to its log.
"""
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from .permissions import AGENT_PERMISSION


def _is_agent(user) -> bool:
    return not user.is_superuser and user.has_perm(AGENT_PERMISSION)


def token_expires_at(token) -> datetime | None:
    """When `token` stops working; None when its kind of account has no expiry (TTL 0)."""
    days = settings.GOGH_AGENT_TOKEN_TTL_DAYS if _is_agent(token.user) else settings.GOGH_API_TOKEN_TTL_DAYS
    if days <= 0:
        return None
    return token.created + timedelta(days=days)


def token_expired(token, now: datetime) -> bool:
    """A token younger than the shorter TTL has not expired whoever holds it: then no query
    asks whose it is (every API request comes through here)."""
    ttls = [days for days in (settings.GOGH_API_TOKEN_TTL_DAYS, settings.GOGH_AGENT_TOKEN_TTL_DAYS) if days > 0]
    if not ttls or now < token.created + timedelta(days=min(ttls)):
        return False
    expires_at = token_expires_at(token)
    return expires_at is not None and expires_at <= now


def _expired_message(token, expires_at: datetime) -> str:
    when = f"{expires_at:%Y-%m-%d %H:%M} UTC"
    if _is_agent(token.user):
        return (f"The API token of agent account {token.user.get_username()!r} expired on {when}; an operator "
                f"gives it a new one with `manage.py create_agent_token {token.user.get_username()} --rotate`.")
    return (f"This API token expired on {when}; sign in to the console and POST /api/auth/token/rotate/, "
            "or ask an operator (`manage.py rotate_token USER`), for a new one.")


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing (401) a token past its expiry."""

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        if token_expired(token, timezone.now()):
            raise AuthenticationFailed(_expired_message(token, token_expires_at(token)))
        return user, token
