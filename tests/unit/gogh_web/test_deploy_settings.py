"""`manage.py check --deploy` is clean with the production variables of docs/configuration.md,
and the defaults still serve the demo on plain http://127.0.0.1 (run in subprocesses: settings
are read once per process)."""
import os
import subprocess
import sys

from django.conf import settings

#: docs/configuration.md, "Production behind a TLS proxy".
PRODUCTION = {
    "DJANGO_SECRET_KEY": "k" * 10 + "-a-long-random-secret-of-fifty-or-more-characters-0123456789",
    "GOGH_ALLOWED_HOSTS": "gogh.example.org",
    "GOGH_CSRF_TRUSTED_ORIGINS": "https://gogh.example.org",
    "GOGH_TRUSTED_PROXIES": "10.0.0.5",
    "GOGH_HTTPS": "1",
    "GOGH_HSTS_SECONDS": "31536000",
    "GOGH_HSTS_INCLUDE_SUBDOMAINS": "1",
    "GOGH_HSTS_PRELOAD": "1",
}
DEMO_WARNINGS = {"security.W004", "security.W008", "security.W012", "security.W016"}


def check_deploy(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {name: value for name, value in os.environ.items()
             if not (name.startswith("GOGH_") or name == "DJANGO_SECRET_KEY")}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=120,
        env={**clean, "GOGH_VAR_DIR": str(tmp_path), **env},
    )


def test_the_documented_production_variables_pass_check_deploy(tmp_path):
    done = check_deploy(tmp_path, **PRODUCTION)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


def test_the_defaults_are_the_demos_plain_http(tmp_path):
    """No HTTPS redirect, no secure-only cookies, no HSTS: the demo on http://127.0.0.1 signs in."""
    done = check_deploy(tmp_path)
    assert done.returncode == 1
    assert {word.strip("():") for word in done.stderr.split() if word.startswith("(security.")} == DEMO_WARNINGS


def test_a_trusted_proxy_that_is_not_an_address_stops_the_start(tmp_path):
    done = check_deploy(tmp_path, GOGH_TRUSTED_PROXIES="10.0.0.5, proxy.internal")
    assert done.returncode != 0
    assert "GOGH_TRUSTED_PROXIES: 'proxy.internal' is not an IP address or network" in done.stderr
