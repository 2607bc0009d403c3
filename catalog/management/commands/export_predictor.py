"""manage.py export_predictor FILE [--id ID]: write trained weights for another cluster."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog.models import PredictorVersion
from catalog.services.predictors import NoActivePredictor, active_version, predictor_export


class Command(BaseCommand):
    help = "Export a predictor version (default: the active p1) with its metadata to FILE."

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("--id", type=int, dest="version_id", help="PredictorVersion id (default: the active version).")
        parser.add_argument("--name", choices=["p1", "p2"], default="p1")

    def handle(self, *args, file, version_id, name, **options):
        try:
            chosen = PredictorVersion.objects.get(pk=version_id) if version_id else active_version(name)
        except (PredictorVersion.DoesNotExist, NoActivePredictor) as exc:
            raise CommandError(str(exc) or f"no predictor version {version_id}") from None
        Path(file).write_bytes(predictor_export(version=chosen))
        self.stdout.write(f"exported {chosen} to {file}")
