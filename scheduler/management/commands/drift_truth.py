"""manage.py drift_truth --factor TARGET:GPU_TYPES:FACTOR ... --out OUT.csv [--truth IN.csv]:
the truth kit for `simulate --truth` (scheduler.simulation.drift). Reads a measurements file
(the reference data by default), writes it with the chosen workloads' throughputs scaled."""
import argparse

from django.core.management.base import BaseCommand, CommandError

from catalog.measurement_csv import MeasurementFileError
from gogh_web.cli_args import output_file
from scheduler.simulation.drift import DriftError, drift_records, parse_drift, write_measurements
from scheduler.simulation.measurements import load_records


def _drift(text: str):
    try:
        return parse_drift(text)
    except DriftError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Command(BaseCommand):
    help = (
        "Write a drifted truth for `simulate --truth`: the measurements of --truth (default: the reference "
        "data) with every throughput of the chosen workloads (or families) on the chosen GPU types multiplied "
        "by a factor, alone and sharing a GPU. The catalog `simulate` starts from stays the reference data."
    )

    def add_arguments(self, parser):
        parser.add_argument("--truth", metavar="IN.csv", help="Measurements CSV to drift (default: reference data).")
        parser.add_argument("--factor", action="append", required=True, type=_drift,
                            metavar="WORKLOAD_OR_FAMILY:GPU_TYPES:FACTOR",
                            help="e.g. 'ResNet-50:*:2' or 'A3C:k80,v100:0.5' (repeatable; factors on one row "
                                 "multiply).")
        parser.add_argument("--out", required=True, type=output_file, metavar="OUT.csv", help="Where to write.")

    def handle(self, *args, **o):
        try:
            records = load_records(o["truth"])
        except MeasurementFileError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"--truth {o['truth']}: {len(exc.errors)} problem(s) in the measurements file") from None
        try:
            drifted = drift_records(records, o["factor"])
        except DriftError as exc:
            raise CommandError(f"--factor: {exc}") from None
        write_measurements(drifted, o["out"])
        changed = sum(1 for a, b in zip(records, drifted) if a != b)
        self.stdout.write(f"{changed} of {len(records)} measurements drifted; written to {o['out']}")
