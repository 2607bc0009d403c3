"""manage.py create_agent_token NAME: the token a node agent signs in with.

Setting up a GPU node otherwise takes three admin pages (a user, the agent permission, a
token). The account is made as `agent_account_ensure` makes it (no password, the agent
permission only); running the command again prints the same token. A human's account
(staff, or one that can sign in with a password) is refused rather than turned into an agent.
"""
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from telemetry.services.nodes import agent_token_ensure


class Command(BaseCommand):
    help = (
        "Create (or show) the agent account NAME and print its API token, for "
        "GOGH_AGENT_TOKEN on a GPU node. Idempotent. See docs/agent.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="Account name, e.g. agent-gpu-node-07 (letters, digits and @.+-_).")

    def handle(self, *args, name, **options):
        user_model = get_user_model()
        try:
            user_model.username_validator(name)
        except ValidationError as exc:
            raise CommandError(f"{name!r} is not a valid account name: {' '.join(exc.messages)}") from None
        existing = user_model.objects.filter(username=name).first()
        if existing and (existing.is_staff or existing.has_usable_password()):
            raise CommandError(
                f"{name!r} is a person's account (staff or with a password); agents get accounts of their own"
            )
        self.stdout.write(agent_token_ensure(username=name))
