"""Sign-in for the console and the admin, slowed down after failed attempts without ever
locking the owner out.

Django's own views would let anyone try passwords as fast as they can send them (30 wrong
passwords for one account, then the right one, all accepted), and its login page answers a
500 to a signed-in user sent back to it (?next=/accounts/login/). A fixed lockout (10
failures locked an account for 15 minutes, the right password included; 50 locked every
account from an address, behind a proxy everyone) turned that into a denial of service: anyone
who knew a username could keep its owner out.

So failures are counted three ways, and each count only makes the next attempt *from where it
applies* wait: once a count passes its free allowance, an attempt must come at least
min(BASE_S * 2**(failures - free), cap) seconds after that count's last failure. An attempt
that comes too early is answered "try again in N s" without its password being checked, and
is not counted.
- per (account, address): an attacker at one address slows himself, not the owner elsewhere;
- per address (any account): password spraying from one address;
- per account (any address): a guess from each of many addresses. This one adds delay only
  at addresses the account has not signed in from in the last KNOWN_ADDRESS_S: the owner at
  a usual address is never slowed by it, and nothing is ever a hard lock.
The address is the client's (gogh_web/security.py: X-Forwarded-For from trusted proxies only).
Counts live in Django's cache (shared by every web process through Redis with REDIS_URL) and
are forgotten FORGET_AFTER_S after their last failure; a successful sign-in clears its (account,
address) count. While a password is checked the attempt holds a short lock on each count it
touches: parallel requests cannot all slip through before the first failure is counted.
"""
import hashlib
import math
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError

from gogh_web.security import client_address

BASE_S = 1.0
FORGET_AFTER_S = 24 * 3600
KNOWN_ADDRESS_S = 30 * 24 * 3600
#: Longest a password check holds its counts' locks: a web process that dies while checking
#: leaves them for at most this long.
CHECK_LOCK_S = 30
#: Tests move time forward through this.
clock = time.time


@dataclass(frozen=True)
class Limit:
    scope: str  # what the count is of, the first part of its cache key
    free: int  # failures allowed before any wait
    cap_s: float  # the longest wait

    def wait_after(self, failures: int) -> float:
        """Seconds the next attempt waits after the last of `failures` failures."""
        if failures < self.free:
            return 0.0
        return min(BASE_S * 2 ** min(failures - self.free, 40), self.cap_s)


PER_PAIR = Limit("pair", free=5, cap_s=15 * 60)
PER_ADDRESS = Limit("address", free=20, cap_s=15 * 60)
PER_ACCOUNT = Limit("account", free=50, cap_s=5 * 60)


def _key(*parts: str) -> str:
    """A cache key for any username and address (hashed: a username may hold spaces or
    characters some cache backends refuse in keys)."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "backslashreplace")).hexdigest()
    return f"gogh:sign-in:{parts[0]}:{digest}"


@dataclass(frozen=True)
class SignInAttempt:
    """One sign-in attempt for `account` from `address`, and the counts it is judged by."""

    account: str
    address: str
    counts: tuple[tuple[Limit, str], ...]

    @classmethod
    def of(cls, username, request) -> "SignInAttempt":
        account = str(username).strip().lower()[:150]
        address = client_address(request) if request else ""
        counts = [(PER_PAIR, _key(PER_PAIR.scope, account, address)), (PER_ADDRESS, _key(PER_ADDRESS.scope, address))]
        if not cache.get(_key("known", account, address)):
            counts.append((PER_ACCOUNT, _key(PER_ACCOUNT.scope, account)))
        return cls(account, address, tuple(counts))

    def wait_s(self, now: float) -> float:
        """How long this attempt must still wait (0: it may be checked now)."""
        waits = [0.0]
        for limit, key in self.counts:
            failures, last = _read(key, now)
            waits.append(last + limit.wait_after(failures) - now)
        return max(waits)

    def lock(self) -> list[str] | None:
        """The locks of this attempt's counts, or None (nothing held) if another attempt holds one."""
        held = []
        for _, key in self.counts:
            if not cache.add(f"{key}:lock", 1, CHECK_LOCK_S):
                cache.delete_many(held)
                return None
            held.append(f"{key}:lock")
        return held

    def failed(self, now: float) -> None:
        for _, key in self.counts:
            failures, _ = _read(key, now)
            cache.set(key, (failures + 1, now), FORGET_AFTER_S)

    def succeeded(self) -> None:
        cache.delete(_key(PER_PAIR.scope, self.account, self.address))
        cache.set(_key("known", self.account, self.address), 1, KNOWN_ADDRESS_S)


def _read(key: str, now: float) -> tuple[int, float]:
    """(failures, time of the last one) of a count; (0, 0) once forgotten."""
    failures, last = cache.get(key) or (0, 0.0)
    if now - last > FORGET_AFTER_S:
        return 0, 0.0
    return failures, last


def _too_soon(wait_s: float) -> ValidationError:
    return ValidationError(f"Too many failed sign-ins; try again in {math.ceil(wait_s)} s.", code="throttled")


class _Throttle:
    """The sign-in form's check, with the password checked only when no count makes it wait."""

    def clean(self):
        attempt = SignInAttempt.of(self.data.get("username", ""), self.request)
        wait_s = attempt.wait_s(clock())
        if wait_s > 0:
            raise _too_soon(wait_s)
        held = attempt.lock()
        if held is None:
            raise _too_soon(1)
        try:
            wait_s = attempt.wait_s(clock())  # another attempt may have failed before we held the locks
            if wait_s > 0:
                raise _too_soon(wait_s)
            try:
                cleaned = super().clean()
            except ValidationError:
                attempt.failed(clock())
                raise
            if self.user_cache is not None:
                attempt.succeeded()
            return cleaned
        finally:
            cache.delete_many(held)


class LimitedAuthenticationForm(_Throttle, AuthenticationForm):
    error_messages = {**AuthenticationForm.error_messages,
                      "invalid_login": "Your username and password did not match. Please try again."}


class LimitedAdminAuthenticationForm(_Throttle, AdminAuthenticationForm):
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
