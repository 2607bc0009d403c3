"""Replacing API tokens: the services behind `manage.py rotate_token`, `create_demo_admin`
and POST /api/auth/token/rotate/.

A token's key is its primary key, so rotation deletes the old token and makes a new one in
one transaction: the old key stops working the moment the new one exists.
"""
from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from .authentication import token_expired, token_expires_at
from .permissions import PersonNotAgent


def token_rotate(*, user) -> Token:
    """A new token for `user`; the old one (if any) is refused from now on."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def token_valid_ensure(*, user) -> Token:
    """`user`'s token, a new one if it has none or the one it has expired (the demo prints a
    token every time it starts: one from last month must not be shown as if it worked)."""
    with transaction.atomic():
        token, created = Token.objects.select_for_update().get_or_create(user=user)
        if not created and token_expired(token, timezone.now()):
            return token_rotate(user=user)
        return token


class RotatedTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The new API token; the previous one is refused from now on.")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When it expires (null: never).")


class TokenRotateView(APIView):
    """POST: replace the caller's own API token and answer the new one. Signed in on the console
    (session and CSRF token) or with a token that still works; agents' tokens are rotated by
    operators (`manage.py create_agent_token NAME --rotate`), since the agent cannot rewrite
    its own configuration."""

    permission_classes = [PersonNotAgent]

    @extend_schema(request=None, responses={200: RotatedTokenSerializer})
    def post(self, request):
        token = token_rotate(user=request.user)
        return Response(RotatedTokenSerializer({"token": token.key, "expires_at": token_expires_at(token)}).data)
