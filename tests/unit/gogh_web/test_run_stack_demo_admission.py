"""`run_stack --demo-agents` (what `make demo` ends with): the simulated agents' nodes are
pre-approved for its daphne, so the demo runs jobs without an operator's click, even when
load_demo_cluster (which approves them too) did not run first."""
from django.core.management import call_command

from gogh_web.management.commands import run_stack
from telemetry.demo_inventory import DEMO_NODES


def started_services(monkeypatch, *args) -> dict:
    started = {}

    class Recorder:
        def __init__(self, services, **options):
            started.update((service.name, service) for service in services)

        def run(self):
            return 0

    monkeypatch.setattr(run_stack, "Supervisor", Recorder)
    call_command("run_stack", "--no-beat", *args)
    return started


def test_demo_agents_nodes_are_pre_approved_beside_the_configured_patterns(monkeypatch, settings, db):
    settings.GOGH_AUTO_APPROVE_NODES = ["gpu-*.lab.example"]
    daphne = started_services(monkeypatch, "--demo-agents")["daphne"]
    assert daphne.env["GOGH_AUTO_APPROVE_NODES"].split(",") == ["gpu-*.lab.example", *(n.hostname for n in DEMO_NODES)]


def test_without_demo_agents_nothing_more_is_pre_approved(monkeypatch, db):
    assert "GOGH_AUTO_APPROVE_NODES" not in started_services(monkeypatch)["daphne"].env
