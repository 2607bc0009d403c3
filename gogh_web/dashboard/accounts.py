"""Sign-in for the console and the admin, with a limit on failed attempts.

Django's own views would let anyone try passwords as fast as they can send them (30 wrong
passwords for one account, then the right one, all accepted), and its login page answers a
500 to a signed-in user sent back to it (?next=/accounts/login/)."""
from urllib.parse import urlparse

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError

#: Failed sign-ins per account, and per client address (several people may share one), within
#: FAILURE_WINDOW_S; beyond them every attempt is refused, the right password included, until
#: the window since the first failure has passed.
MAX_FAILURES_PER_ACCOUNT = 10
MAX_FAILURES_PER_ADDRESS = 50
FAILURE_WINDOW_S = 15 * 60


class _FailureLimit:
    """Counts failed sign-ins in Django's cache (the web server process's memory unless CACHES says otherwise)."""

    def clean(self):
        limits = _counters(self.data.get("username", ""), self.request)
        if any((cache.get(key) or 0) >= limit for key, limit in limits):
            raise ValidationError(
                f"Too many failed sign-ins; try again in {FAILURE_WINDOW_S // 60} minutes.", code="locked"
            )
        try:
            return super().clean()
        except ValidationError:
            for key, _ in limits:
                cache.add(key, 0, FAILURE_WINDOW_S)
                try:
                    cache.incr(key)
                except ValueError:  # expired in between: start again
                    cache.set(key, 1, FAILURE_WINDOW_S)
            raise


def _counters(username, request) -> list[tuple[str, int]]:
    address = request.META.get("REMOTE_ADDR", "") if request else ""
    return [(f"gogh:sign-in-failures:account:{str(username).strip().lower()[:150]}", MAX_FAILURES_PER_ACCOUNT),
            (f"gogh:sign-in-failures:address:{address}", MAX_FAILURES_PER_ADDRESS)]


class LimitedAuthenticationForm(_FailureLimit, AuthenticationForm):
    error_messages = {**AuthenticationForm.error_messages,
                      "invalid_login": "Your username and password did not match. Please try again."}


class LimitedAdminAuthenticationForm(_FailureLimit, AdminAuthenticationForm):
    pass


class SignInView(auth_views.LoginView):
    authentication_form = LimitedAuthenticationForm
    redirect_authenticated_user = True

    def get_redirect_url(self):
        """The page to go to after signing in, never the sign-in page itself (a signed-in user
        sent there would loop: Django raises a 500)."""
        url = super().get_redirect_url()
        if url and urlparse(url).path == self.request.path:
            return ""
        return url
