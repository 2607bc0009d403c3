"""gogh_web/security.py: the Content-Security-Policy of the console and the admin, and proxy
headers believed from trusted proxies only."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory, override_settings

from gogh_web.security import client_address, proxy_networks

PAGES = ["/", "/accounts/login/", "/dashboard/", "/dashboard/jobs/", "/dashboard/predictions/", "/dashboard/solver/",
         "/dashboard/tradeoff/", "/admin/", "/admin/login/", "/admin/scheduler/job/"]


@pytest.mark.parametrize("path", PAGES)
def test_console_and_admin_pages_carry_a_policy_without_inline_script_or_style(client, staff, path):
    staff.is_superuser = True  # every admin page
    staff.save()
    if path not in {"/accounts/login/", "/admin/login/"}:
        client.force_login(staff)
    response = client.get(path)
    assert response.status_code == 200
    policy = dict(rule.split(" ", 1) for rule in response["Content-Security-Policy"].split("; "))
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["style-src-attr"] == "'unsafe-inline'"  # Plotly's setAttribute("style"); no <style>, no script
    assert policy["connect-src"] == "'self' ws://testserver wss://testserver"
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
    assert [rule for rule in policy.values() if "unsafe" in rule] == ["'unsafe-inline'"]


def test_our_templates_have_no_inline_script_style_or_event_handler():
    """What the policy would block: every script comes from static/."""
    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=", re.IGNORECASE)
    templates = Path(settings.BASE_DIR, "templates").rglob("*.html")
    found = {path.name: inline.findall(path.read_text()) for path in templates}
    assert found and not any(found.values()), found


def test_the_api_docs_page_keeps_working_without_a_policy(client, alice):
    """drf-spectacular's Swagger UI template has its own inline script and style."""
    client.force_login(alice)
    response = client.get("/api/docs/")
    assert response.status_code == 200 and "Content-Security-Policy" not in response


PROXIES = proxy_networks("10.9.0.1, 10.8.0.0/16, fd00::/8")


@pytest.mark.parametrize("peer, forwarded, expected", [
    ("203.0.113.7", "198.51.100.1", "203.0.113.7"),  # not a proxy: its header is its own words
    ("10.9.0.1", "198.51.100.1, 203.0.113.7", "203.0.113.7"),  # the right-most untrusted hop
    ("10.9.0.1", "198.51.100.1, 203.0.113.7, 10.8.1.2", "203.0.113.7"),  # through two proxies
    ("fd00::1", "2001:db8::5", "2001:db8::5"),
    ("10.9.0.1", "10.8.1.2", "10.8.1.2"),  # only proxies: the left-most
    ("10.9.0.1", "", "10.9.0.1"),  # a proxy that said nothing
    ("10.9.0.1", "1.2.3.4, not-an-address", "not-an-address"),  # garbage is untrusted, never skipped
])
def test_client_address(peer, forwarded, expected):
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
    with override_settings(GOGH_TRUSTED_PROXIES=PROXIES):
        assert client_address(request) == expected


def test_a_bad_trusted_proxy_is_refused():
    with pytest.raises(ImproperlyConfigured, match="'10.0.0.300' is not an IP address or network"):
        proxy_networks("10.0.0.1,10.0.0.300")


@override_settings(GOGH_TRUSTED_PROXIES=PROXIES, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
                   SECURE_SSL_REDIRECT=True)
def test_only_a_trusted_proxy_can_say_the_request_came_over_https(db):
    """SecurityMiddleware redirects plain HTTP to HTTPS; a client that claims HTTPS itself is
    still redirected (Django alone would believe any peer's X-Forwarded-Proto)."""
    from_client = Client(REMOTE_ADDR="203.0.113.7").get("/", HTTP_X_FORWARDED_PROTO="https")
    assert from_client.status_code == 301 and from_client["Location"].startswith("https://")
    from_proxy = Client(REMOTE_ADDR="10.9.0.1").get("/", HTTP_X_FORWARDED_PROTO="https")
    assert from_proxy.status_code == 200
