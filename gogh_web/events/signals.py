"""Sockets follow their user's access: when a user logs out, or their account (active, staff,
password) or tenant membership changes, their open sockets are woken through the per-user
group and check the session again (consumers.py) - closing with 4401 when it no longer signs
anyone in, asking the page to resync when what it may see changed. The account hooks are
connected here; the app that owns tenancy connects its own, calling recheck_user when a user's
tenant changes.

The wake-up goes through the channel layer, so with the embedded in-process layer it reaches
only the sockets of this process (a logout through daphne's HTTP does); changes made elsewhere
are caught at the socket's next wake, since every wake checks the session first.
"""
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

RECHECK, LOGOUT = "live.recheck", "live.logout"

logger = logging.getLogger(__name__)


def user_group(user_id: int) -> str:
    """The channel-layer group of one user's live sockets."""
    return f"live.user.{user_id}"


def recheck_user(user_id: int) -> None:
    """Wake the user's sockets once the current transaction commits (they read the new state)."""
    transaction.on_commit(lambda: _send(user_id, {"type": RECHECK}))


def _send(user_id: int, message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(user_group(user_id), message)
    except Exception:  # the sockets still check the session at their next wake
        logger.warning("Could not wake the live sockets of user %s", user_id, exc_info=True)


def _logged_out(sender, request, user, **kwargs):
    """Sent before the session is flushed: the sockets of that session close without looking."""
    if user is not None:
        session = getattr(request, "session", None)
        _send(user.pk, {"type": LOGOUT, "session_key": session.session_key if session else None})


def _user_saved(sender, instance, created, update_fields=None, **kwargs):
    if not created and set(update_fields or ()) != {"last_login"}:  # not every login
        recheck_user(instance.pk)


def _user_deleted(sender, instance, **kwargs):
    recheck_user(instance.pk)


def connect() -> None:
    """Called once by the app config's ready()."""
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="live-logout")
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="live-user-saved")
    post_delete.connect(_user_deleted, sender=user_model, dispatch_uid="live-user-deleted")
