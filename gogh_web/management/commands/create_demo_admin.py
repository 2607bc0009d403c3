"""`manage.py create_demo_admin`: the demo's staff login and API token, printed every time.

--username names the administrator to make, or an existing staff account or superuser to show
again. Any other existing account (a tenant's user, an agent) is refused rather than printed
with its token and moved into tenant demo, and a name the admin's own forms would refuse is
refused here too."""
import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from gogh_web.api.tokens import token_valid_ensure
from scheduler.models import Membership, Tenant


class Command(BaseCommand):
    help = (
        "Create (once) the demo administrator, a member of tenant 'demo', and print its login and "
        "API token. The password is generated on first run and kept in var/demo-admin-password."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--host", default="http://127.0.0.1:8000", help="Base URL shown in the printed examples.")

    def handle(self, *args, username, host, **options):
        user_model = get_user_model()
        try:
            user_model._meta.get_field(user_model.USERNAME_FIELD).clean(username, None)
        except ValidationError as exc:
            raise CommandError(f"{username!r} is not a valid account name: {' '.join(exc.messages)}") from None
        password = self._password()
        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
            user, created = user_model.objects.get_or_create(
                username=username, defaults={"is_staff": True, "is_superuser": True}
            )
            if not (created or user.is_staff or user.is_superuser):
                raise CommandError(
                    f"{username!r} is an existing account that is neither staff nor superuser; "
                    "give --username a new name (or an administrator's)"
                )
            if created:
                user.set_password(password)
                user.save()
            Membership.objects.get_or_create(user=user, defaults={"tenant": tenant})
            token = token_valid_ensure(user=user)
        shown = password if created or user.check_password(password) else "(changed since; not shown)"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"  Admin:    {host}/admin/   user {username}   password {shown}",
                    f"  Console:  {host}/dashboard/   (same login)",
                    f"  API docs: {host}/api/docs/",
                    f"  Token:    {token.key}",
                    "  Submit a job:",
                    f"    curl -s -X POST {host}/api/jobs/ -H 'Authorization: Token {token.key}' \\",
                    "         -H 'Content-Type: application/json' \\",
                    "         -d '{\"workload\": \"ResNet-50 (batch size 64)\", "
                    "\"min_throughput\": 5, \"max_gpus\": 2, \"total_steps\": 100}'",
                    "",
                ]
            )
        )

    @staticmethod
    def _password() -> str:
        path = settings.VAR_DIR / "demo-admin-password"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(12))
        return path.read_text().strip()
