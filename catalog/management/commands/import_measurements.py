"""manage.py import_measurements FILE: add an operator's measurements to the catalog."""
from django.core.management.base import BaseCommand, CommandError

from catalog.measurement_csv import MeasurementFileError
from catalog.services import measurements_import


class Command(BaseCommand):
    help = (
        "Import measurements from a CSV file (format: docs/measurements-csv.md). Header row "
        "required; columns workload, gpu_type, throughput (required) and num_gpus, "
        "consolidated, partner, partner_throughput, power_w, utilization, memory_gb, source, "
        "observed_at, reference (optional). All rows or none: if any row is bad, nothing is "
        "imported, every problem is printed to stderr as FILE:LINE: REASON and the command "
        "exits with status 1."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE", help="CSV file of measurements.")

    def handle(self, *args, file, **options):
        try:
            created = measurements_import(path=file)
        except MeasurementFileError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"nothing imported: {len(exc.errors)} problem(s) in {file}") from None
        self.stdout.write(f"imported {len(created)} measurements from {file}")
