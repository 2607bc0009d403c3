"""manage.py simulate --json OUT [--truth FILE] [--catalog FILE] [--jobs N] [--seed S] [--trace FILE]:
the closed-loop evaluation in virtual time. The logic lives in scheduler.simulation; this
command parses, reads the files, and writes the report."""
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from catalog.measurement_csv import MeasurementFileError
from catalog.predictors import ARCHITECTURES
from scheduler.simulation.measurements import load_records, to_rows
from scheduler.simulation.policies import POLICIES
from scheduler.simulation.run import DEFAULT_JOBS, DEFAULT_JOBS_PER_HOUR, build_scenario, format_table, run_all, scenario_summary
from scheduler.simulation.scenario import Failure
from scheduler.simulation.trace import TraceError
from scheduler.simulation.truth import Truth


class Command(BaseCommand):
    help = (
        "Closed-loop evaluation in virtual time: a simulated 108-GPU cluster (36 K80, 36 P100, 36 V100), "
        "Poisson arrivals of jobs drawn like Gavel's generator (or --trace), and every policy (gogh, "
        "gogh_fixed_weight, oracle, round_robin, random, greedy_fastest, greedy_efficient) on the same "
        "arrivals. --truth is what the cluster really does, --catalog what the scheduler starts from "
        "(measurement files in the import format, docs/measurements-csv.md; both default to the reference "
        "data). CPU only, no database. Prints a table and writes the JSON report."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", required=True, type=Path, metavar="OUT", help="Where to write the JSON report.")
        parser.add_argument("--truth", metavar="FILE", help="Measurements CSV of the simulated cluster's true behaviour.")
        parser.add_argument("--catalog", metavar="FILE", help="Measurements CSV the catalog and the predictors start from.")
        parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"Jobs to generate (default {DEFAULT_JOBS}).")
        parser.add_argument("--jobs-per-hour", type=float, default=DEFAULT_JOBS_PER_HOUR,
                            help=f"Poisson arrival rate (default {DEFAULT_JOBS_PER_HOUR}).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--trace", metavar="FILE", help="A Gavel-format trace instead of generated jobs.")
        parser.add_argument("--deviation", type=float, default=0.15,
                            help="Standard deviation of the per-workload log factor between truth and data (default 0.15).")
        parser.add_argument("--noise", type=float, default=0.05, help="Relative noise of each observed round (default 0.05).")
        parser.add_argument("--policies", default=",".join(p.name for p in POLICIES), help="Comma-separated subset to run.")
        parser.add_argument("--fail", action="append", default=[], metavar="SECONDS:GPU_ID",
                            help="Make a GPU fail at a virtual time, e.g. 7200:v100-s0-g1 (repeatable).")
        parser.add_argument("--quick", action="store_true", help="A tiny predictor network (seconds to fit), for tests.")
        parser.add_argument("--architecture", choices=ARCHITECTURES, default=settings.GOGH_PREDICTOR_ARCHITECTURE,
                            help="The predictor gogh learns with (default: GOGH_PREDICTOR_ARCHITECTURE, "
                                 f"{settings.GOGH_PREDICTOR_ARCHITECTURE}).")

    def handle(self, *args, **o):
        if o["jobs"] < 1 or o["jobs_per_hour"] <= 0 or o["deviation"] < 0 or o["noise"] < 0:
            raise CommandError("--jobs must be >= 1, --jobs-per-hour > 0, --deviation and --noise >= 0.")
        chosen = [name.strip() for name in o["policies"].split(",") if name.strip()]
        known = {p.name: p for p in POLICIES}
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise CommandError(f"Unknown policies {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}.")
        truth_records = self._records(o["truth"], "--truth")
        # The catalog starts from the reference data unless --catalog names a file.
        catalog_records = self._records(o["catalog"], "--catalog") if o["catalog"] or o["truth"] else truth_records
        truth = Truth(to_rows(truth_records), seed=o["seed"], deviation=o["deviation"], noise=o["noise"])
        if not truth.workloads():
            raise CommandError(f"{o['truth']}: no isolated throughput measured on 1 GPU; nothing to simulate.")
        try:
            scenario = build_scenario(truth, jobs=o["jobs"], jobs_per_hour=o["jobs_per_hour"], seed=o["seed"],
                                      trace=o["trace"], failures=[self._failure(f) for f in o["fail"]])
        except (TraceError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        gpu_ids = {g.id for g in scenario.gpus}
        bad = [f.gpu_id for f in scenario.failures if f.gpu_id not in gpu_ids]
        if bad:
            raise CommandError(f"--fail: no GPU {', '.join(bad)} in the cluster (ids look like {scenario.gpus[0].id})")
        missing = sorted({g.gpu_type for g in scenario.gpus} - set(truth.gpu_types))
        if missing:
            self.stderr.write(f"warning: the truth data has no measurements on {', '.join(missing)}; jobs cannot run there")
        report = run_all(scenario, truth, truth_records, catalog_records, seed=o["seed"], quick=o["quick"],
                         architecture=o["architecture"], policies=[known[name] for name in chosen],
                         log=self.stderr.write)
        report["scenario"] = scenario_summary(
            scenario, seed=o["seed"], truth=o["truth"] or "reference (Gavel)",
            catalog=o["catalog"] or "reference (Gavel)", trace=o["trace"], deviation=o["deviation"],
            noise=o["noise"], jobs_per_hour=None if o["trace"] else o["jobs_per_hour"], quick=o["quick"],
            predictor=o["architecture"],
        )
        o["json"].write_text(json.dumps(report, indent=2))
        self.stdout.write(format_table(report))
        self.stdout.write(f"\nReport written to {o['json']}")

    def _records(self, path, option):
        try:
            return load_records(path)
        except MeasurementFileError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"{option} {path}: {len(exc.errors)} problem(s) in the measurements file") from None

    @staticmethod
    def _failure(text: str) -> Failure:
        seconds, _, gpu = text.partition(":")
        try:
            return Failure(float(seconds), gpu)
        except ValueError:
            raise CommandError(f"--fail takes SECONDS:GPU_ID, not {text!r}") from None
