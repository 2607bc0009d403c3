"""What run_stack's console shows: by default the activity lines and warnings (Celery quiet,
every process at WARNING); --verbose or GOGH_LOG_LEVEL brings every process's INFO back."""
import pytest
from django.core.management import call_command

from gogh_web.management.commands import run_stack


@pytest.fixture
def started(monkeypatch, db):
    """started(*args) -> (services by name, the environment the supervisor gives them)."""

    def run(*args):
        seen = {}

        class Recorder:
            def __init__(self, services, env=None, **options):
                seen.update(services={service.name: service for service in services}, env=env)

            def run(self):
                return 0

        monkeypatch.setattr(run_stack, "Supervisor", Recorder)
        call_command("run_stack", *args)
        return seen["services"], seen["env"]

    return run


def celery_levels(services) -> dict:
    """{service: (its -l level, whether Celery runs --quiet)} of the Celery services."""
    return {
        name: (service.argv[service.argv.index("-l") + 1], "--quiet" in service.argv)
        for name, service in services.items() if "-l" in service.argv
    }


def test_by_default_every_process_runs_at_warning_and_celery_prints_no_banner(started, monkeypatch):
    monkeypatch.delenv("GOGH_LOG_LEVEL", raising=False)
    services, env = started()
    assert celery_levels(services) == dict.fromkeys(("rounds", "worker", "beat"), ("WARNING", True))
    assert env["GOGH_LOG_LEVEL"] == "WARNING"


def test_verbose_brings_info_back(started, monkeypatch):
    monkeypatch.setenv("GOGH_LOG_LEVEL", "ERROR")
    services, env = started("--verbose")
    assert celery_levels(services) == dict.fromkeys(("rounds", "worker", "beat"), ("INFO", False))
    assert env["GOGH_LOG_LEVEL"] == "INFO"


def test_gogh_log_level_chooses_the_level(started, monkeypatch):
    monkeypatch.setenv("GOGH_LOG_LEVEL", "debug")
    services, env = started("--no-beat")
    assert celery_levels(services) == {"rounds": ("DEBUG", False), "worker": ("DEBUG", False)}
    assert env["GOGH_LOG_LEVEL"] == "DEBUG"
