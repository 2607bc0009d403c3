"""manage.py bench_predictors --json OUT [--data FILE] [--quick]: score P1/P2, baselines, unseen GPU types."""
import json as _json

from django.core.management.base import BaseCommand, CommandError

from catalog.measurement_csv import MeasurementFileError, read_measurements
from catalog.predictors import build_catalog, records_from_gavel
from catalog.predictors.bench import BenchSettings, format_table, run_benchmark
from catalog.predictors.bench_unseen import format_unseen, run_unseen
from catalog.predictors.scaling import format_multi_gpu, multi_gpu_holdout
from gogh_web.cli_args import non_negative_int, output_file


class Command(BaseCommand):
    help = (
        "Benchmark the predictors (three architectures) and the baselines: leave-one-workload-out "
        "and leave-one-family-out P1, P2 curves after 0-10 observations, latency, and each GPU type "
        "held out in turn (zero-shot from datasheets, then after the profiling suite's cases). CPU only; reads "
        "the reference data (Gavel) unless --data names a measurements CSV (docs/measurements-csv.md). "
        "Needs no database. Prints a table and writes the JSON report."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", required=True, metavar="OUT", type=output_file, help="Where to write the JSON report."
        )
        parser.add_argument(
            "--data", metavar="FILE", help="Measurements CSV to benchmark on instead of the reference data."
        )
        parser.add_argument("--quick", action="store_true", help="A few folds and tiny models: under a minute, for CI.")
        parser.add_argument("--seed", type=non_negative_int, default=0)

    def handle(self, *args, json, data: str | None, quick: bool, seed: int, **options):
        try:
            records = read_measurements(data) if data else records_from_gavel()
        except MeasurementFileError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"cannot benchmark on {data}: {len(exc.errors)} problem(s)") from None
        catalog = build_catalog(records)
        if len(catalog.workloads) < 3 or not catalog.gpu_types:
            raise CommandError("the data needs at least 3 workloads and one GPU type measured alone on 1 GPU")
        report = run_benchmark(catalog, BenchSettings(quick=quick, seed=seed), log=self.stderr.write)
        report["p1"]["unseen_gpu_type"] = run_unseen(records, quick=quick, log=self.stderr.write)
        report["p1"]["multi_gpu_unmeasured"] = multi_gpu_holdout(catalog)
        report["data"] = data or "reference (Gavel)"
        with open(json, "w", encoding="utf-8") as handle:
            _json.dump(report, handle, indent=2)
        self.stdout.write(format_table(report))
        self.stdout.write("\n" + format_unseen(report["p1"]["unseen_gpu_type"]))
        self.stdout.write("\n" + format_multi_gpu(report["p1"]["multi_gpu_unmeasured"]))
