"""bench_round --json OUT [--jobs 500] [--gpus 1024] [--measurements 1000000] [--configurations 100]:
one scheduling round, end to end, on a scratch database beside the configured one (PostgreSQL
when DATABASE_URL names it), timed phase by phase; the pure parts live in scheduler.round_bench.

The scratch database gets the reference catalog, a cluster and jobs built as bench_solver builds
its instances (scheduler.optimizer.bench.make_instance, the same seed), every node approved,
and the telemetry history of round_bench.history; then one round runs with the default solver
settings and is timed: the catalog read, the rest of the problem build, the solve, the apply
(writes, one transaction), the live events stored after the commit, and the whole round.
"""
import json
import os
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from catalog.gavel import read_throughputs
from catalog.models import GpuType, Measurement, MeasurementSource, Workload
from catalog.services.predictors_store import catalog_policy
from catalog.services.reference import catalog_load_reference
from gogh_web.cli_args import non_negative_int, output_file, positive_int
from gogh_web.events import sending
from gogh_web.events.models import Event
from scheduler import optimizer, problem_source, round_bench, services
from scheduler.models import Job, Membership, Tenant
from scheduler.optimizer import bench
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.problem import SolverSettings
from telemetry.models import Gpu, Node

INSERT_CHUNK = 5000
COPY_COLUMNS = ("workload_id", "gpu_type_id", "num_gpus", "consolidated", "throughput", "source", "reference",
                "observed_at", "created_at")


class Command(BaseCommand):
    help = "Time one scheduling round (catalog read, build, solve, apply, events) on a scratch database."

    def add_arguments(self, parser):
        parser.add_argument("--json", required=True, type=output_file, help="Where to write the JSON report.")
        parser.add_argument("--jobs", type=positive_int, default=500, help="Pending jobs for the round to place.")
        parser.add_argument("--gpus", type=positive_int, default=1024, help="GPUs of the cluster (at least 12).")
        parser.add_argument("--measurements", type=non_negative_int, default=1_000_000,
                            help="Telemetry rows of history.")
        parser.add_argument("--configurations", type=positive_int, default=100,
                            help="Configurations the telemetry history is spread over.")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **options):
        if options["gpus"] < 12:
            raise CommandError("--gpus must be at least 12 (a 4-GPU node of each of three types).")
        if options["jobs"] > round(0.75 * options["gpus"]):
            raise CommandError(f"--gpus {options['gpus']} makes {round(0.75 * options['gpus'])} jobs at most; "
                               f"ask for fewer jobs or more GPUs.")
        with scratch_database():
            self.stderr.write(f"Building the state in {connection.settings_dict['NAME']} ...")
            state = build_state(options)
            self.stderr.write(f"  {state['measurements']} measurements in {state['insert_s']:.1f} s; running the round")
            load_before = round(os.getloadavg()[0], 2)
            report = {**state, **{k: options[k] for k in ("jobs", "gpus", "seed")}, "round": run_round(),
                      "load_before": load_before, "load_after": round(os.getloadavg()[0], 2)}
        options["json"].write_text(json.dumps(report, indent=2))
        self.stdout.write(round_bench.format_table(report))
        self.stdout.write(f"\nReport written to {options['json']}")


@contextmanager
def scratch_database():
    """A fresh, migrated database beside the configured one, dropped afterwards: the benchmark
    never reads or writes real data. PostgreSQL: NAME_bench_round; SQLite: bench_round.sqlite3
    next to the configured file."""
    settings = connection.settings_dict
    name = settings["NAME"]
    if connection.vendor == "postgresql":
        scratch = f"{name}_bench_round"
    else:
        scratch = str(Path(name).with_name("bench_round.sqlite3"))
    settings.setdefault("TEST", {})["NAME"] = scratch
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)


def build_state(options) -> dict:
    catalog_load_reference()
    instance = bench.make_instance(options["gpus"], CatalogPredictions.from_gavel(read_throughputs()), options["seed"],
                                   SolverSettings())
    gpu_types = {t.name: t for t in GpuType.objects.all()}
    workloads = {w.name: w for w in Workload.objects.all()}
    now = timezone.now()
    nodes = {name: Node.objects.create(hostname=name, approved_at=now)
             for name in dict.fromkeys(g.node for g in instance.gpus)}
    indexes = dict.fromkeys(nodes, 0)
    gpus = []
    for g in instance.gpus:
        gpus.append(Gpu(node=nodes[g.node], index=indexes[g.node], uuid=f"GPU-{g.id}", gpu_type=gpu_types[g.gpu_type],
                        pcie_switch=g.pcie_switch))
        indexes[g.node] += 1
    Gpu.objects.bulk_create(gpus)
    owners = {}
    for slug in bench.TENANTS:
        owners[slug] = get_user_model().objects.create_user(username=f"bench-{slug}")
        Membership.objects.create(user=owners[slug], tenant=Tenant.objects.create(name=slug, slug=slug))
    Job.objects.bulk_create(
        Job(owner=owners[j.tenant], tenant=owners[j.tenant].membership.tenant, workload=workloads[j.workload],
            min_throughput=j.min_throughput, max_gpus=j.max_gpus, priority=j.priority,
            pending_reason=services.WAITING_FOR_ROUND)
        for j in instance.jobs[: options["jobs"]]
    )
    configurations = round_bench.pick_configurations(
        [round_bench.Configuration(*row) for row in Measurement.objects.filter(
            source=MeasurementSource.REFERENCE, partner__isnull=True, throughput__gt=0,
        ).values_list("workload_id", "gpu_type_id", "num_gpus", "consolidated", "throughput")],
        options["configurations"], options["seed"],
    )
    rows = round_bench.history(configurations, options["measurements"], options["seed"])
    started = timezone.now()
    insert_history(rows, now)
    return {
        "database": connection.vendor,
        "measurements": Measurement.objects.count(),
        "configurations": len(configurations),
        "window": catalog_policy().window,
        "insert_s": round((timezone.now() - started).total_seconds(), 1),
    }


def insert_history(rows, now) -> None:
    """PostgreSQL: COPY (a million rows in seconds); elsewhere bulk inserts in chunks."""
    def values(row):
        c = row.configuration
        return (c.workload_id, c.gpu_type_id, c.num_gpus, c.consolidated, row.throughput, MeasurementSource.TELEMETRY,
                "bench", now - timedelta(seconds=row.seconds_before_now), now)

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            with cursor.copy(f"COPY {Measurement._meta.db_table} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(values(row))
            cursor.execute(f"VACUUM ANALYZE {Measurement._meta.db_table}")
        return
    chunk = []
    for row in rows:
        chunk.append(Measurement(**dict(zip(COPY_COLUMNS, values(row), strict=True))))
        if len(chunk) == INSERT_CHUNK:
            Measurement.objects.bulk_create(chunk)
            chunk = []
    Measurement.objects.bulk_create(chunk)


def run_round() -> dict:
    """One real round (services.scheduling_round_run), its phases timed by wrapping the
    functions it calls; queries counted on the connection."""
    clock = round_bench.PhaseClock()
    queries = []
    batches = []
    store = sending._store_and_notify

    def store_counted(build):
        batches.append(build)
        return store(build)

    def solver(name, **options):
        return round_bench.TimedSolver(get_solver(name, **options), clock)

    get_solver = optimizer.get_solver
    events_before = Event.objects.count()
    with ExitStack() as stack:
        for owner, name, phase in ((problem_source, "policy_groups", "catalog_read_s"),
                                   (services, "problem_from_database", "problem_s"),
                                   (services, "_apply", "apply_s")):
            stack.enter_context(round_bench.replaced(owner, name, clock.timed(phase, getattr(owner, name))))
        stack.enter_context(round_bench.replaced(optimizer, "get_solver", solver))
        stack.enter_context(round_bench.replaced(sending, "_store_and_notify", clock.timed("events_s", store_counted)))
        stack.enter_context(connection.execute_wrapper(lambda execute, *a: queries.append(1) or execute(*a)))
        with clock.phase("total_s"):
            result = services.scheduling_round_run(trigger="manual")
    catalog_records = sum(len(group) for group in problem_source.policy_groups().values())
    for seconds in (clock.seconds, clock.cpu_seconds):
        seconds["problem_build_s"] = seconds.pop("problem_s") - seconds["catalog_read_s"]
    run = result.solve_run
    return {
        **{name: round(clock.seconds.get(name, 0.0), 3) for name in round_bench.PHASES},
        "cpu": {name: round(clock.cpu_seconds.get(name, 0.0), 3) for name in round_bench.PHASES},
        "placed": run.num_placed,
        "solver": run.solver,
        "status": run.status,
        "queries": len(queries),
        "events": Event.objects.count() - events_before,
        "event_batches": len(batches),
        "catalog_records": catalog_records,
    }
