"""Failed sign-ins slow the next attempt from where they came, and never lock the owner out
(gogh_web/dashboard/accounts.py). The clock is the module's `clock`, moved by the tests."""
import pytest
from django.test import Client, override_settings
from django.urls import reverse

from gogh_web.dashboard import accounts
from gogh_web.dashboard.accounts import FORGET_AFTER_S, PER_ACCOUNT, PER_ADDRESS, PER_PAIR, SignInAttempt
from gogh_web.security import proxy_networks

ATTACKER, OWNER = "203.0.113.7", "198.51.100.20"


@pytest.fixture
def now(monkeypatch):
    """A clock the tests move: now.t += seconds."""

    class Clock:
        t = 1_000_000.0

        def __call__(self):
            return self.t

    clock = Clock()
    monkeypatch.setattr(accounts, "clock", clock)
    return clock


def sign_in(username, password, address, path=None, **headers):
    """POST the console's (or `path`'s) sign-in form from `address` -> (response, signed in?)."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(path or reverse("login"), {"username": username, "password": password}, **headers)
    return response, "_auth_user_id" in client.session


def wait_shown(response) -> int | None:
    """The N of "try again in N s", None when the attempt was checked."""
    text = response.content.decode()
    marker = "try again in "
    if marker not in text:
        return None
    return int(text.split(marker, 1)[1].split(" s", 1)[0])


def test_an_attacker_at_one_address_cannot_lock_the_owner_out_at_another(alice, now):
    """Before: 10 wrong passwords locked alice for 15 minutes wherever she was, the right one included."""
    for _ in range(30):
        sign_in("alice", "guess", ATTACKER)
    response, signed_in = sign_in("alice", "pw-alice", ATTACKER)
    assert not signed_in and wait_shown(response) == 1  # the attacker's address waits, password unchecked
    response, signed_in = sign_in("alice", "pw-alice", OWNER)
    assert signed_in and response.status_code == 302


def test_the_wait_doubles_with_each_failure_and_ends(alice, now):
    for _ in range(PER_PAIR.free):
        response, _ = sign_in("alice", "guess", ATTACKER)
        assert b"did not match" in response.content  # a few mistypes cost nothing
    waits = []
    for _ in range(5):
        response, _ = sign_in("alice", "guess", ATTACKER)
        waits.append(wait_shown(response))
        now.t += waits[-1] - 0.5
        assert wait_shown(sign_in("alice", "guess", ATTACKER)[0]) == 1  # too early: refused, not counted
        now.t += 0.5
        assert b"did not match" in sign_in("alice", "guess", ATTACKER)[0].content
    assert waits == [1, 2, 4, 8, 16]
    assert wait_shown(sign_in("alice", "pw-alice", ATTACKER)[0]) == 32
    now.t += 32
    response, signed_in = sign_in("alice", "pw-alice", ATTACKER)
    assert signed_in  # the wait ended, the right password is accepted, and the count starts again
    assert b"did not match" in sign_in("alice", "guess", ATTACKER)[0].content


def test_the_wait_is_capped_and_failures_are_forgotten(alice, now):
    for failures in range(PER_PAIR.free + 15):
        sign_in("alice", "guess", ATTACKER)
        now.t += PER_PAIR.wait_after(failures + 1)
    now.t -= PER_PAIR.wait_after(PER_PAIR.free + 15)
    assert wait_shown(sign_in("alice", "guess", ATTACKER)[0]) == PER_PAIR.cap_s == 15 * 60
    now.t += FORGET_AFTER_S + 1
    assert b"did not match" in sign_in("alice", "guess", ATTACKER)[0].content


def test_guessing_many_accounts_from_one_address_is_slowed_there_only(alice, now):
    for i in range(PER_ADDRESS.free):
        sign_in(f"user-{i}", "guess", ATTACKER)
    assert wait_shown(sign_in("alice", "pw-alice", ATTACKER)[0]) == 1
    assert sign_in("alice", "pw-alice", OWNER)[1]


def test_guesses_from_many_addresses_slow_new_addresses_but_never_the_owners_usual_one(alice, now):
    assert sign_in("alice", "pw-alice", OWNER)[1]  # alice's usual address
    for i in range(PER_ACCOUNT.free):
        sign_in("alice", "guess", f"192.0.2.{i}")
    newcomer = "192.0.2.200"
    assert wait_shown(sign_in("alice", "pw-alice", newcomer)[0]) == 1
    response, signed_in = sign_in("alice", "pw-alice", OWNER)
    assert signed_in and response.status_code == 302
    now.t += 1
    assert sign_in("alice", "pw-alice", newcomer)[1]  # a wait, never a lock


def test_the_admin_sign_in_is_throttled_alike(staff, now):
    for _ in range(PER_PAIR.free):
        sign_in(staff.username, "guess", ATTACKER, "/admin/login/")
    response, signed_in = sign_in(staff.username, f"pw-{staff.username}", ATTACKER, "/admin/login/")
    assert not signed_in and wait_shown(response) == 1
    assert sign_in(staff.username, f"pw-{staff.username}", OWNER, "/admin/login/")[1]


def test_an_attempt_being_checked_holds_off_parallel_ones(alice, now):
    """Requests sent together must not all be checked before the first failure is counted."""
    assert SignInAttempt.of("alice", None).lock() is not None  # one from the same place, being checked
    response, signed_in = sign_in("alice", "pw-alice", "")
    assert not signed_in and wait_shown(response) == 1


@override_settings(GOGH_TRUSTED_PROXIES=proxy_networks("10.9.0.1, 10.8.0.0/16"))
def test_behind_trusted_proxies_the_client_address_counts(alice, now):
    proxy = "10.9.0.1"
    for _ in range(PER_PAIR.free):  # the attacker writes a made-up address first: it proves nothing
        sign_in("alice", "guess", proxy, HTTP_X_FORWARDED_FOR=f"{OWNER}, {ATTACKER}, 10.8.3.4")
    assert wait_shown(sign_in("alice", "pw-alice", proxy, HTTP_X_FORWARDED_FOR=f"{ATTACKER}, 10.8.3.4")[0]) == 1
    assert sign_in("alice", "pw-alice", proxy, HTTP_X_FORWARDED_FOR=f"{OWNER}, 10.8.3.4")[1]


def test_an_untrusted_peer_cannot_choose_its_address(alice, now):
    """Without GOGH_TRUSTED_PROXIES, X-Forwarded-For is the client's own words: ignored."""
    for i in range(PER_PAIR.free):
        sign_in("alice", "guess", ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert wait_shown(sign_in("alice", "pw-alice", ATTACKER, HTTP_X_FORWARDED_FOR=OWNER)[0]) == 1
