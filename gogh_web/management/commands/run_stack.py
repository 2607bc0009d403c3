"""`manage.py run_stack`: daphne, two Celery workers (one for the rounds queue, one for the
others) and Celery beat in the foreground, and with --demo-agents one simulated node agent per
demo node, so the demo cluster runs jobs.

Its console shows what happens to jobs and nodes (the gogh.activity lines, gogh_web.activity)
and warnings; Celery's banners and per-task lines and the INFO lines of every process come
back with --verbose (or GOGH_LOG_LEVEL=INFO): a person reading the demo's log saw about 50
lines a minute of beat and worker chatter burying a few job and agent events."""
import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from gogh_web.celery_config import DEFAULT_QUEUE, MAINTENANCE, PREDICTIONS, ROUNDS
from gogh_web.supervisor import Service, Supervisor
from scheduler.cell_runner import distributed
from telemetry.demo_inventory import DEMO_AGENT_USERNAME, DEMO_NODES, simulated_agent_args
from telemetry.services import agent_token_ensure


class Command(BaseCommand):
    help = (
        "Run the control plane in the foreground: daphne (HTTP + WebSockets), a Celery worker for "
        "scheduling rounds, one for everything else, and Celery beat (and with --demo-agents a simulated "
        "agent for each demo node). Ctrl-C (or SIGTERM) stops all of them cleanly; if one dies the others "
        "stop too."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="Address daphne listens on (default 127.0.0.1).")
        parser.add_argument("--port", type=int, default=8000, help="Port daphne listens on (default 8000).")
        parser.add_argument(
            "--concurrency", type=int, default=1,
            help="Processes of the worker for predictions, maintenance and sweeps (default 1); rounds have their own.",
        )
        parser.add_argument("--no-beat", action="store_true", help="Do not run Celery beat (another machine does).")
        parser.add_argument("--grace", type=float, default=15.0, help="Seconds to wait after SIGTERM before SIGKILL.")
        parser.add_argument(
            "--demo-agents", action="store_true",
            help="Also run a simulated node agent for each node of load_demo_cluster (make demo does).",
        )
        parser.add_argument(
            "--speedup", type=float, default=1.0, help="With --demo-agents: simulated jobs run this much faster."
        )
        parser.add_argument(
            "--verbose", action="store_true",
            help="Show every process's INFO lines too (Celery's banners, each task received and succeeded, beat's "
            "sends); by default the console shows job and node activity and warnings (GOGH_LOG_LEVEL, if set, "
            "chooses the level instead).",
        )

    def handle(self, *args, host, port, concurrency, no_beat, grace, demo_agents, speedup, verbose, **options):
        python = sys.executable
        level = "INFO" if verbose else os.environ.get("GOGH_LOG_LEVEL", "WARNING").upper()
        celery = [python, "-m", "celery", "-A", "gogh_web", *([] if level in ("INFO", "DEBUG") else ["--quiet"])]
        services = [
            Service(
                "daphne",
                [python, "-m", "daphne", "-b", host, "-p", str(port),
                 "--access-log", str(settings.VAR_DIR / "access.log"), "gogh_web.asgi:application"],
                env=self._demo_admission() if demo_agents else {},
            ),
            # Rounds never wait behind a backlog of predictions or maintenance (docs/architecture.md).
            Service(
                "rounds", [*celery, "worker", "-l", level, "-Q", ROUNDS, *self._rounds_pool(), "-n", "rounds@%h"],
            ),
            Service(
                "worker",
                [*celery, "worker", "-l", level, "-Q", ",".join([PREDICTIONS, MAINTENANCE, DEFAULT_QUEUE]),
                 "--concurrency", str(concurrency), "-n", "tasks@%h"],
            ),
        ]
        if not no_beat:
            services.append(Service("beat", [*celery, "beat", "-l", level]))
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        if demo_agents:
            services += self._demo_agents(python, url, speedup)
        self.stdout.write(f"GOGH control plane on {url}/ (Ctrl-C stops everything)")
        code = Supervisor(services, grace_s=grace, env={**os.environ, "GOGH_LOG_LEVEL": level}, out=self.stdout).run()
        if code:
            sys.exit(code)

    @staticmethod
    def _rounds_pool() -> list[str]:
        """One process on the embedded broker, where the `cells` solver solves its cells in turn;
        with a shared broker a round waits for its cells in the same queue, so a second process
        solves them."""
        return ["--concurrency", "2"] if distributed() else ["--pool", "solo"]

    @staticmethod
    def _demo_admission() -> dict:
        """The demo agents' nodes are pre-approved, whether or not load_demo_cluster ran first:
        they are this machine's own simulations (docs/inventory.md, node admission)."""
        names = [*settings.GOGH_AUTO_APPROVE_NODES, *(node.hostname for node in DEMO_NODES)]
        return {"GOGH_AUTO_APPROVE_NODES": ",".join(names)}

    @staticmethod
    def _demo_agents(python: str, url: str, speedup: float) -> list[Service]:
        token = agent_token_ensure(username=DEMO_AGENT_USERNAME)
        logs = settings.VAR_DIR / "agent-logs"
        return [
            Service(
                node.hostname.removeprefix("demo-"),
                [python, "-m", "telemetry.agent", "--url", url, *simulated_agent_args(node, seed=number),
                 "--speedup", str(speedup), "--log-dir", str(logs / node.hostname)],
                env={"GOGH_AGENT_TOKEN": token},
                after_url=f"{url}/api/",  # the API index: 200 once daphne serves
            )
            for number, node in enumerate(DEMO_NODES)
        ]
