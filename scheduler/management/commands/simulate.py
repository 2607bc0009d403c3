"""manage.py simulate --json OUT [--truth FILE] [--catalog FILE] [--jobs N] [--seed S] [--trace FILE] [--services]:
the closed-loop evaluation in virtual time. The logic lives in scheduler.simulation; this
command parses, reads the files, and writes the report."""
import argparse
import json
from dataclasses import asdict

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from catalog.measurement_csv import MeasurementFileError
from catalog.predictors import ARCHITECTURES
from gogh_web.cli_args import non_negative_float, output_file, positive_float, positive_int
from scheduler.simulation.cluster import DEFAULT_LAYOUT
from scheduler.simulation.measurements import load_records, without_memory
from scheduler.simulation.modern import MODERN_LAYOUT, SUITE_CASES, modern_truth
from scheduler.simulation.policies import NO_HEALTH, POLICIES, SERVICE_POLICIES, SHARED
from scheduler.simulation.run import (
    DEFAULT_JOBS,
    DEFAULT_JOBS_PER_HOUR,
    EXPLORATION,
    SERVICES_JOBS,
    SERVICES_JOBS_PER_HOUR,
    SERVICES_LAYOUT,
    build_scenario,
    format_table,
    run_all,
    scenario_summary,
)
from scheduler.simulation.scenario import Failure
from scheduler.simulation.service_rounds import CannotProvision
from scheduler.simulation.tenants import DEFAULT_HALF_LIFE_H
from scheduler.simulation.trace import TraceError
from scheduler.simulation.truth import Truth

#: Beyond these the truth model stops meaning anything: a per-workload factor exp(N(0, 2)) is
#: already e^2 ~ 7.4 per standard deviation (and exp overflows for deviations in the hundreds);
#: a round's noise with a standard deviation of 100 % of the rate clips half the observations to 0.
MAX_DEVIATION, MAX_NOISE = 2.0, 1.0
#: A spread between boards of one type beyond exp(N(0, 0.5)) is no longer "a few per cent".
MAX_GPU_VARIATION = 0.5
CLUSTERS = ("gavel", "modern")


def _at_most(limit: float):
    def parse(text: str) -> float:
        value = non_negative_float(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number in 0..{limit:g}")
        return value

    return parse


def _failure(text: str) -> Failure:
    """SECONDS:GPU_ID, a GPU failing at a finite virtual time of at least 0."""
    seconds, _, gpu = text.partition(":")
    try:
        time_s = non_negative_float(seconds)
    except argparse.ArgumentTypeError:
        time_s = None
    if time_s is None or not gpu:
        raise argparse.ArgumentTypeError(f"takes SECONDS:GPU_ID, SECONDS a finite number of at least 0; not {text!r}")
    return Failure(time_s, gpu)


class Command(BaseCommand):
    help = (
        "Closed-loop evaluation in virtual time: a simulated 108-GPU cluster (36 K80, 36 P100, 36 V100), "
        "Poisson arrivals of jobs drawn like Gavel's generator (or --trace), and every policy (gogh, "
        "gogh_no_power_limit, gogh_fixed_weight, oracle, gavel_max_min, gavel_ftf, round_robin, random, "
        "greedy_fastest, greedy_efficient) on the same arrivals; --services adds inference services with latency SLOs "
        "(and the policies dedicated, gogh_no_services and oracle_no_services). "
        "--truth is what the cluster really does, "
        "--catalog what the scheduler starts from "
        "(measurement files in the import format, docs/measurements-csv.md; both default to the reference "
        "data). CPU only, no database. Prints a table and writes the JSON report."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", required=True, type=output_file, metavar="OUT", help="Where to write the JSON report."
        )
        parser.add_argument(
            "--truth", metavar="FILE", help="Measurements CSV of the simulated cluster's true behaviour."
        )
        parser.add_argument(
            "--catalog", metavar="FILE", help="Measurements CSV the catalog and the predictors start from."
        )
        parser.add_argument("--jobs", type=positive_int,
                            help=f"Jobs to generate (default {DEFAULT_JOBS}; {SERVICES_JOBS} with --services).")
        parser.add_argument("--jobs-per-hour", type=positive_float,
                            help=f"Poisson arrival rate (default {DEFAULT_JOBS_PER_HOUR}; "
                                 f"{SERVICES_JOBS_PER_HOUR} with --services).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--trace", metavar="FILE", help="A Gavel-format trace instead of generated jobs.")
        parser.add_argument("--deviation", type=_at_most(MAX_DEVIATION), default=0.15,
                            help="Standard deviation of the per-workload log factor between truth and data "
                                 f"(0..{MAX_DEVIATION:g}, default 0.15).")
        parser.add_argument("--noise", type=_at_most(MAX_NOISE), default=0.05,
                            help=f"Relative noise of each observed round (0..{MAX_NOISE:g}, default 0.05).")
        parser.add_argument(
            "--policies", help="Comma-separated subset to run (default: every policy of the scenario: "
                               f"{', '.join(p.name for p in POLICIES)}; with --services "
                               f"{', '.join(p.name for p in SERVICE_POLICIES)})."
        )
        parser.add_argument("--services", action="store_true",
                            help="The services+training scenario: four inference services with P99 bounds and "
                                 "two days of diurnal traffic (one with a 3x spike) beside the training arrivals, "
                                 "on 8 K80 + 12 P100 + 12 V100 (docs/simulation.md).")
        parser.add_argument("--fail", action="append", type=_failure, default=[], metavar="SECONDS:GPU_ID",
                            help="Make a GPU fail at a virtual time, e.g. 7200:v100-s0-g1 (repeatable).")
        parser.add_argument(
            "--quick", action="store_true", help="A tiny predictor network (seconds to fit), for tests."
        )
        parser.add_argument("--cluster", choices=CLUSTERS, default="gavel",
                            help="gavel: 36 K80 + 36 P100 + 36 V100 (default); modern: 44 T4 + 40 A100 + 24 H100, "
                                 "a truth synthesized from --truth's V100 rows, a catalog that knows none of the "
                                 "types until a profiling campaign measured them (docs/simulation.md).")
        parser.add_argument("--no-explore", action="store_true",
                            help="gogh does not probe jobs its predictions strand (the before of docs/simulation.md's "
                                 "exploration figure).")
        parser.add_argument("--tenants", action="store_true",
                            help="The multi-tenant scenario: 4 tenants with shares 4/2/1/1 and quotas per GPU type, "
                                 "one without a quota whose jobs arrive in bursts (docs/simulation.md).")
        parser.add_argument("--half-life-h", type=positive_float, default=DEFAULT_HALF_LIFE_H,
                            help="Hours in which a tenant's fair-share usage halves "
                                 f"(default {DEFAULT_HALF_LIFE_H:g}).")
        parser.add_argument("--gpu-variation", type=_at_most(MAX_GPU_VARIATION), default=0.0,
                            help="Spread of board speeds within a type: each board's speed x exp(N(0, X)) "
                                 f"(0..{MAX_GPU_VARIATION:g}, default 0; e.g. 0.03).")
        parser.add_argument("--ageing", action="store_true",
                            help="Boards age: 1%% of speed per 100 days from a start age of 0-3 years, and three "
                                 "boards decay fast, one falling 10%% within the run (docs/simulation.md).")
        parser.add_argument("--health", action="store_true",
                            help="Three boards' remapped rows rise for 6-24 h before they fail, and one board is "
                                 "braked for heat 12 h; adds gogh_no_health, gogh without the health rule "
                                 "(docs/gpu_health.md).")
        parser.add_argument("--architecture", choices=ARCHITECTURES, default=settings.GOGH_PREDICTOR_ARCHITECTURE,
                            help="The predictor gogh learns with (default: GOGH_PREDICTOR_ARCHITECTURE, "
                                 f"{settings.GOGH_PREDICTOR_ARCHITECTURE}).")

    def handle(self, *args, **o):
        services = o["services"]
        scenario_policies = SERVICE_POLICIES if services else (*POLICIES, NO_HEALTH) if o["health"] else POLICIES
        chosen = [name.strip() for name in (o["policies"] or ",".join(p.name for p in scenario_policies)).split(",")
                  if name.strip()]
        known = {p.name: p for p in (*POLICIES, *SERVICE_POLICIES, NO_HEALTH)}
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise CommandError(f"Unknown policies {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}.")
        self._check_services(services, [known[name] for name in chosen], o)
        o["jobs"] = o["jobs"] or (SERVICES_JOBS if services else DEFAULT_JOBS)
        o["jobs_per_hour"] = o["jobs_per_hour"] or (SERVICES_JOBS_PER_HOUR if services else DEFAULT_JOBS_PER_HOUR)
        source_records = self._records(o["truth"], "--truth")
        # The catalog starts from the reference data unless --catalog names a file.
        catalog_records = self._records(o["catalog"], "--catalog") if o["catalog"] or o["truth"] else source_records
        modern = o["cluster"] == "modern"
        truth_records = modern_truth(source_records) if modern else source_records
        truth = Truth(without_memory(truth_records), seed=o["seed"], deviation=o["deviation"], noise=o["noise"])
        if not truth.workloads():
            raise CommandError(f"{o['truth']}: no isolated throughput measured on 1 GPU; nothing to simulate.")
        try:
            scenario = build_scenario(truth, jobs=o["jobs"], jobs_per_hour=o["jobs_per_hour"], seed=o["seed"],
                                      trace=o["trace"], failures=o["fail"],
                                      layout=MODERN_LAYOUT if modern else SERVICES_LAYOUT if services
                                      else DEFAULT_LAYOUT, campaign=modern,
                                      tenants=o["tenants"], half_life_h=o["half_life_h"],
                                      gpu_variation=o["gpu_variation"], ageing=o["ageing"], services=services,
                                      health=o["health"])
        except (TraceError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        gpu_ids = {g.id for g in scenario.gpus}
        bad = [f.gpu_id for f in scenario.failures if f.gpu_id not in gpu_ids]
        if bad:
            raise CommandError(f"--fail: no GPU {', '.join(bad)} in the cluster (ids look like {scenario.gpus[0].id})")
        cluster_types = {g.gpu_type for g in scenario.gpus}
        if not cluster_types & set(truth.gpu_types):
            raise CommandError(f"--truth {o['truth']}: no measurements on any of the cluster's GPU types "
                               f"({', '.join(sorted(cluster_types))}); no job could run")
        missing = sorted(cluster_types - set(truth.gpu_types))
        if missing:
            self.stderr.write(
                f"warning: the truth data has no measurements on {', '.join(missing)}; jobs cannot run there"
            )
        try:
            report = run_all(scenario, truth, truth_records, catalog_records, seed=o["seed"], quick=o["quick"],
                             architecture=o["architecture"], policies=[known[name] for name in chosen],
                             log=self.stderr.write, exploration=None if o["no_explore"] else EXPLORATION)
        except CannotProvision as exc:
            raise CommandError(f"{exc}; nothing written (run without `dedicated`, or on another seed)") from None
        report["scenario"] = scenario_summary(
            scenario, seed=o["seed"], truth=o["truth"] or "reference (Gavel)",
            catalog=o["catalog"] or "reference (Gavel)", trace=o["trace"], deviation=o["deviation"],
            noise=o["noise"], jobs_per_hour=None if o["trace"] else o["jobs_per_hour"], quick=o["quick"],
            predictor=o["architecture"],
            exploration=None if o["no_explore"] else asdict(EXPLORATION), cluster=o["cluster"],
            campaign=None if scenario.campaign is None else {
                "gpus": list(scenario.campaign.gpu_ids), "duration_s": scenario.campaign.duration_s,
                "cases": len(SUITE_CASES)},
        )
        try:
            text = json.dumps(report, indent=2, allow_nan=False)
        except ValueError as exc:  # NaN is not JSON: a report that other tools cannot read is no report
            raise CommandError(f"the report holds a number JSON cannot carry ({exc}); nothing written") from None
        o["json"].write_text(text)
        self.stdout.write(format_table(report))
        self.stdout.write(f"\nReport written to {o['json']}")

    @staticmethod
    def _check_services(services: bool, policies, o) -> None:
        """--services runs on its own cluster and tenant; the policies that only mean something
        with services need it, and Gavel's cannot serve (policies.py)."""
        if services:
            clash = [option for option, on in (("--cluster modern", o["cluster"] == "modern"),
                                               ("--tenants", o["tenants"])) if on]
            if clash:
                raise CommandError(f"--services cannot be combined with {' or '.join(clash)}: "
                                   "the services scenario has its own cluster and one tenant")
            gavel = [p.name for p in policies if p.solver.startswith("gavel")]
            if gavel:
                raise CommandError(f"--services: {', '.join(gavel)} cannot serve inference services "
                                   "(its rounds rotate every job by lease); choose other policies")
            return
        needs = [p.name for p in policies if p.services != SHARED]
        if needs:
            raise CommandError(f"{', '.join(needs)}: only with --services (a run with inference services)")

    def _records(self, path, option):
        try:
            return load_records(path)
        except MeasurementFileError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"{option} {path}: {len(exc.errors)} problem(s) in the measurements file") from None
