"""manage.py export_predictor FILE [--id ID]: write trained weights for another cluster."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog.models import PredictorVersion
from catalog.services.predictors import NoActivePredictor, active_version, predictor_export
from catalog.services.predictors_store import PredictorFileError
from gogh_web.cli_args import output_file, positive_int


class Command(BaseCommand):
    help = "Export a predictor version (default: the active p1) with its metadata to FILE."

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE", type=output_file)
        parser.add_argument(
            "--id", type=positive_int, dest="version_id", help="PredictorVersion id (default: the active version)."
        )
        parser.add_argument("--name", choices=["p1", "p2"], default="p1")

    def handle(self, *args, file, version_id, name, **options):
        try:
            chosen = PredictorVersion.objects.get(pk=version_id) if version_id is not None else active_version(name)
        except (PredictorVersion.DoesNotExist, NoActivePredictor) as exc:
            raise CommandError(str(exc) or f"no predictor version {version_id}") from None
        try:
            data = predictor_export(version=chosen)
        except PredictorFileError as exc:
            raise CommandError(f"cannot export {chosen}: {exc}") from None
        Path(file).write_bytes(data)
        self.stdout.write(f"exported {chosen} to {file}")
