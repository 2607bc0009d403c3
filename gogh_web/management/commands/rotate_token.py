"""`manage.py rotate_token USER`: replace USER's API token and print the new one.

For an operator answering "my token expired" or "my token leaked": the old token is refused
the moment the new one exists. Node agents' accounts have their own command
(`create_agent_token NAME --rotate`), which also checks that the account is an agent's."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from gogh_web.api.authentication import token_expires_at
from gogh_web.api.tokens import token_rotate


class Command(BaseCommand):
    help = "Replace USER's API token with a new one and print it (the old one stops working at once)."

    def add_arguments(self, parser):
        parser.add_argument("username", help="The account whose token to replace.")

    def handle(self, *args, username, **options):
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist:
            raise CommandError(f"no account named {username!r}") from None
        if not user.is_active:
            raise CommandError(f"{username!r} is deactivated: its token would be refused; reactivate it first")
        token = token_rotate(user=user)
        expires_at = token_expires_at(token)
        self.stdout.write(token.key)
        self.stderr.write(f"expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "never expires")
