"""manage.py import_predictor FILE [--no-fine-tune]: adopt weights trained on another cluster."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog.services.predictors import NothingToTrainOn, predictor_import


class Command(BaseCommand):
    help = ("Import an exported predictor. By default it is fine-tuned on this cluster's catalog "
            "first (transfer learning); it becomes active only if it scores no worse than the active one.")

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("--no-fine-tune", action="store_true", help="Store the weights as they are.")

    def handle(self, *args, file, no_fine_tune, **options):
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        try:
            version = predictor_import(data=data, fine_tune=not no_fine_tune, source=Path(file).name)
        except NothingToTrainOn as exc:
            raise CommandError(f"{exc}; or import the weights as they are (--no-fine-tune)") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {version}")
