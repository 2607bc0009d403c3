"""manage.py load_reference_catalog: seed the catalog from the reference data it ships with."""
from django.core.management.base import BaseCommand

from catalog.services import catalog_load_reference


class Command(BaseCommand):
    help = (
        "Load the reference catalog: the default GPU types (k80, p100, v100, t4, a100, h100, h200, l4, a10, l40s), "
        "Gavel's 26 training workloads and its measured throughputs "
        "(catalog/reference/gavel, see catalog/reference/ATTRIBUTION.md). "
        "Idempotent: safe to run again. GPU types and workloads that already exist are left "
        "as they are (an operator's edits stay); reference measurements that differ from the "
        "file are set back to it; measurements from other sources are never touched."
    )

    def handle(self, *args, **options):
        result = catalog_load_reference()
        for label, counts in (
            ("GPU types", result.gpu_types),
            ("workloads", result.workloads),
            ("measurements", result.measurements),
        ):
            self.stdout.write(
                f"{label + ':':<14}{counts.created:>6} created {counts.updated:>6} updated "
                f"{counts.unchanged:>6} unchanged"
            )
