"""manage.py bench_ingest [--nodes 125 --gpus 8 --duration 60] [--url URL --token TOKEN] [--json OUT]:
simulated node agents uploading GPU samples to a running control plane, and what came of it.

The load lives in telemetry.ingest_load (pure Python); this command registers the nodes, runs
the load, watches the database's connections (pg_stat_activity, every 0.25 s) and prints the
report. Without --url it starts the stack itself on a free loopback port (`run_stack`: daphne,
a worker and beat, with this process's environment, so DATABASE_URL, CELERY_BROKER_URL and
REDIS_URL as exported) and stops it at the end. With --url, DATABASE_URL must name the
database of that stack for the connection count to mean anything.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from gogh_web.cli_args import output_file, positive_float, positive_int
from telemetry import ingest_load
from telemetry.services import agent_token_ensure

BENCH_AGENT = "bench-ingest-agent"
CONNECTIONS_SQL = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


class Command(BaseCommand):
    help = (
        "Load the sample ingest with simulated agents (N nodes x G GPUs at 1 Hz for T s); print and write the report."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=positive_int, default=125)
        parser.add_argument("--gpus", type=positive_int, default=8, help="GPUs per node.")
        parser.add_argument("--duration", type=positive_float, default=60.0, help="Seconds of load.")
        parser.add_argument("--sample-interval", type=positive_float, default=1.0)
        parser.add_argument("--upload-interval", type=positive_float, default=5.0, help="As the agent's default.")
        parser.add_argument("--heartbeat-interval", type=positive_float, default=15.0, help="As the agent's default.")
        parser.add_argument(
            "--batch-size", type=positive_int, default=500, help="Samples per upload at most (<= 1000)."
        )
        parser.add_argument("--timeout", type=positive_float, default=10.0, help="Seconds per request, as the agent's.")
        parser.add_argument("--gpu-type", default="v100", help="GPU type the simulated GPUs register as.")
        parser.add_argument("--prefix", default="bench", help="Hostnames and GPU UUIDs start with this.")
        parser.add_argument("--url", help="A running control plane; without it the command starts one.")
        parser.add_argument("--token", help="With --url: an agent account's token.")
        parser.add_argument("--port", type=positive_int, help="Port of the stack it starts (default: a free one).")
        parser.add_argument("--json", type=output_file, help="Where to write the JSON report.")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **options):
        if options["batch_size"] > 1000:
            raise CommandError("--batch-size is at most 1000 (the API's limit per upload).")
        if options["url"] and not options["token"]:
            raise CommandError("--url needs --token (an agent account's token: manage.py create_agent_token NAME).")
        plan = ingest_load.LoadPlan(
            nodes=options["nodes"], gpus_per_node=options["gpus"], duration_s=options["duration"],
            sample_interval_s=options["sample_interval"], upload_interval_s=options["upload_interval"],
            heartbeat_interval_s=options["heartbeat_interval"], batch_size=options["batch_size"],
            timeout_s=options["timeout"], seed=options["seed"],
        )
        stack = None
        try:
            if options["url"]:
                url, token = options["url"].rstrip("/"), options["token"]
            else:
                token = agent_token_ensure(username=BENCH_AGENT)
                stack, url = self._start_stack(options["port"] or _free_port())
            http = ingest_load.Http(url, token, plan.timeout_s)
            nodes = self._register(http, plan, options["prefix"], options["gpu_type"])
            self.stderr.write(f"{len(nodes)} nodes registered; {plan.duration_s:g} s of load on {url}")
            watcher = ConnectionWatcher()
            watcher.start()
            web_cpu = web_cpu_s(stack)
            tally = ingest_load.run(plan, http=http, nodes=nodes)
            result = ingest_load.report(plan, tally, max_db_connections=watcher.stop())
            result["web_cpu_s"] = web_cpu_s(stack) - web_cpu if web_cpu is not None else None
        finally:
            if stack is not None:
                _stop(stack)
        if options["json"]:
            options["json"].write_text(json.dumps(result, indent=2))
        self.stdout.write(ingest_load.format_table(result))

    def _start_stack(self, port: int) -> tuple[subprocess.Popen, str]:
        url = f"http://127.0.0.1:{port}"
        log = settings.VAR_DIR / "bench_ingest_stack.log"
        stack = subprocess.Popen(
            [sys.executable, "manage.py", "run_stack", "--host", "127.0.0.1", "--port", str(port)],
            cwd=settings.BASE_DIR, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if stack.poll() is not None:
                raise CommandError(f"the stack exited with {stack.returncode} before serving; see {log}")
            try:
                urllib.request.urlopen(f"{url}/api/", timeout=2)
                return stack, url
            except urllib.error.HTTPError:
                return stack, url  # it answered
            except OSError:
                time.sleep(0.5)
        _stop(stack)
        raise CommandError(f"the stack did not answer on {url} within 90 s; see {log}")

    def _register(self, http, plan, prefix: str, gpu_type: str) -> list[tuple[int, list[str]]]:
        nodes = []
        for number in range(plan.nodes):
            body = ingest_load.node_registration(prefix, number, plan.gpus_per_node, gpu_type)
            status, _, payload, _ = http.post("/api/nodes/register/", body)
            if status not in (200, 201):
                raise CommandError(f"registering {body['hostname']} answered {status}: {payload[:500]!r}")
            nodes.append((json.loads(payload)["id"], [gpu["uuid"] for gpu in body["gpus"]]))
        return nodes


class ConnectionWatcher(threading.Thread):
    """The most connections to this database seen at once (other than its own); None off PostgreSQL."""

    def __init__(self):
        super().__init__(daemon=True)
        self.most: int | None = None
        self._done = threading.Event()

    def run(self):
        if connection.vendor != "postgresql":
            return
        try:
            while not self._done.is_set():
                with connection.cursor() as cursor:
                    cursor.execute(CONNECTIONS_SQL)
                    self.most = max(self.most or 0, cursor.fetchone()[0])
                self._done.wait(0.25)
        finally:
            connection.close()

    def stop(self) -> int | None:
        self._done.set()
        self.join()
        return self.most


def web_cpu_s(stack: subprocess.Popen | None) -> float | None:
    """CPU seconds the stack's daphne process has used so far (Linux /proc); None for a stack
    it did not start. What the load cost the web tier, whatever else the machine was doing."""
    if stack is None:
        return None
    try:
        children = Path(f"/proc/{stack.pid}/task/{stack.pid}/children").read_text().split()
        for pid in children:
            if b"daphne" in Path(f"/proc/{pid}/cmdline").read_bytes():
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except OSError:
        return None
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(stack: subprocess.Popen) -> None:
    stack.send_signal(signal.SIGTERM)
    try:
        stack.wait(timeout=30)
    except subprocess.TimeoutExpired:
        stack.kill()
        stack.wait()
