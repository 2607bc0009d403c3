"""manage.py create_agent_token NAME [--rotate]: the token a node agent signs in with.

Setting up a GPU node otherwise takes three admin pages (a user, the agent permission, a
token). The account is made as `agent_account_ensure` makes it (no password, the agent
permission only); running the command again prints the same token (a new one once it has
expired: GOGH_AGENT_TOKEN_TTL_DAYS), and --rotate replaces it (a leaked token stops working at
once). An existing account that is not already an agent's
(a person's: staff, superuser, or one that can sign in with a password; a tenant's, such as an
API-only or SSO user; one without the agent permission) is refused rather than turned into an
agent, and so is a deactivated agent: its token would be refused, and reactivating it is an
operator's decision. The rules live in agent_account_ensure, so every caller keeps them.
"""
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from gogh_web.api.authentication import token_expired
from telemetry.services.nodes import agent_token_ensure


class Command(BaseCommand):
    help = (
        "Create (or show) the agent account NAME and print its API token, for "
        "GOGH_AGENT_TOKEN on a GPU node. Idempotent; --rotate replaces the token. See docs/agent.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="Account name, e.g. agent-gpu-node-07 (letters, digits and @.+-_).")
        parser.add_argument("--rotate", action="store_true", help="Replace the account's token with a new one.")

    def handle(self, *args, name, rotate, **options):
        user_model = get_user_model()
        longest = user_model._meta.get_field(user_model.USERNAME_FIELD).max_length
        if len(name) > longest:
            raise CommandError(f"account names have at most {longest} characters; {name[:20]!r}... has {len(name)}")
        try:
            user_model.username_validator(name)
        except ValidationError as exc:
            raise CommandError(f"{name!r} is not a valid account name: {' '.join(exc.messages)}") from None
        try:
            with transaction.atomic():
                current = Token.objects.filter(user__username=name).first()
                expired = current is not None and token_expired(current, timezone.now())  # GOGH_AGENT_TOKEN_TTL_DAYS
                if rotate or expired:  # only an agent's token goes: agent_token_ensure refuses any other account
                    Token.objects.filter(user__username=name).delete()
                token = agent_token_ensure(username=name)
        except ValidationError as exc:  # the rollback keeps the token of a refused account
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(token)
