"""`manage.py demo_setup`: every set-up step of `make demo` in one process, skipping what is done.

Each `manage.py` process loads Django and PyTorch again (several seconds each on a busy 2-core
machine); six of them made a second `make demo` take minutes before the API answered. Here they
run as one process, and steps whose work is already done say so instead of redoing it: applied
migrations, static files collected from unchanged sources, an active predictor, a registered and
approved demo cluster. The reference catalog is always compared with its file (it writes only
what differs, in about a second), so a changed file still reaches the database. The demo login
is printed every time. With --run-stack the same process then runs the control plane
(run_stack --demo-agents), which spares one more start of Django and PyTorch.
"""
import hashlib
import os
import time

from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor

from catalog.models import PredictorStatus, PredictorVersion
from telemetry.demo_inventory import DEMO_NODES
from telemetry.models import Node

# Kept inside STATIC_ROOT, so that removing the folder also forgets what was collected.
STATIC_FINGERPRINT = ".collected-sources"


class Command(BaseCommand):
    help = (
        "Prepare the demo in one process: migrate, collectstatic, load_reference_catalog, "
        "train_predictor --if-none, load_demo_cluster and create_demo_admin, skipping what is already "
        "done. `make demo` runs it with --run-stack."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run-stack", action="store_true",
                            help="Then run the control plane with its demo agents (run_stack --demo-agents).")
        parser.add_argument("--port", type=int, default=8000,
                            help="Port of the control plane, in the printed login and for --run-stack (default 8000).")

    def handle(self, *args, run_stack, port, **options):
        started = time.monotonic()
        self._migrate()
        self._collectstatic()
        self._say("reference catalog: comparing with catalog/reference (writes only what differs)")
        call_command("load_reference_catalog", stdout=self.stdout)
        self._train_predictor()
        self._load_demo_cluster()
        call_command("create_demo_admin", host=f"http://127.0.0.1:{port}", stdout=self.stdout)
        self._say(f"ready in {time.monotonic() - started:.1f} s")
        if run_stack:
            connections.close_all()  # the stack's processes open their own
            call_command("run_stack", demo_agents=True, port=port, stdout=self.stdout)

    def _say(self, line: str) -> None:
        self.stdout.write(f"[set-up] {line}")

    def _migrate(self) -> None:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if not plan:
            self._say("database: migrations already applied")
            return
        self._say(f"database: applying {len(plan)} migrations to {connection.settings_dict['NAME']}")
        call_command("migrate", interactive=False, verbosity=0, stdout=self.stdout)

    def _collectstatic(self) -> None:
        fingerprint = static_sources_fingerprint()
        stamp = settings.STATIC_ROOT / STATIC_FINGERPRINT
        if stamp.exists() and stamp.read_text() == fingerprint:
            self._say("static files: sources unchanged since the last collection")
            return
        self._say(f"static files: collecting into {settings.STATIC_ROOT}")
        call_command("collectstatic", interactive=False, verbosity=0, stdout=self.stdout)
        stamp.write_text(fingerprint)

    def _train_predictor(self) -> None:
        if PredictorVersion.objects.filter(name="p1", status=PredictorStatus.ACTIVE).exists():
            self._say("predictor: an active p1 version exists, nothing to train")
            return
        self._say("predictor: training p1 on the reference catalog (about 10 s)")
        call_command("train_predictor", if_none=True, stdout=self.stdout)

    def _load_demo_cluster(self) -> None:
        hostnames = [node.hostname for node in DEMO_NODES]
        if Node.objects.filter(hostname__in=hostnames, approved_at__isnull=False).count() == len(hostnames):
            self._say(f"demo cluster: its {len(hostnames)} nodes are registered and approved")
            return
        self._say("demo cluster: registering its nodes")
        call_command("load_demo_cluster", stdout=self.stdout)


def static_sources_fingerprint() -> str:
    """A digest of every file collectstatic would copy (path, size, modification time) and of
    the storage that writes them: it changes when any of them does."""
    digest = hashlib.sha256(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    ignore_patterns = apps.get_app_config("staticfiles").ignore_patterns
    entries = []
    for finder in get_finders():
        for path, storage in finder.list(ignore_patterns):
            stat = os.stat(storage.path(path))
            prefix = getattr(storage, "prefix", None) or ""
            entries.append(f"{prefix}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode() + b"\n")
    return digest.hexdigest()
