"""manage.py train_predictor: train a predictor from the catalog (cold start: the reference data)."""
from django.core.management.base import BaseCommand, CommandError

from catalog.models import PredictorStatus, PredictorVersion
from catalog.predictors import ARCHITECTURES
from catalog.services.predictors import NothingToTrainOn, predictor_train
from gogh_web.cli_args import positive_int


class Command(BaseCommand):
    help = ("Train a predictor version on the catalog's records, score it on held-out workloads and "
            "make it active if it scores no worse than the active version.")

    def add_arguments(self, parser):
        parser.add_argument("--name", choices=["p1", "p2"], default="p1")
        parser.add_argument("--architecture", choices=ARCHITECTURES)
        parser.add_argument("--epochs", type=positive_int, help="Training epochs of a network (default 8).")
        parser.add_argument("--if-none", action="store_true",
                            help="Do nothing when a version of this predictor is already active (cold start).")

    def handle(self, *args, name, architecture, epochs, if_none, **options):
        if if_none and PredictorVersion.objects.filter(name=name, status=PredictorStatus.ACTIVE).exists():
            self.stdout.write(f"an active {name} predictor exists; nothing to train")
            return
        try:
            version = predictor_train(name=name, architecture=architecture,
                                      hyperparameters={"epochs": epochs} if epochs is not None else None)
        except NothingToTrainOn as exc:
            raise CommandError(str(exc)) from None
        score = "none (no co-location records to score rho on)" if version.val_mae is None else f"{version.val_mae:.4f}"
        self.stdout.write(f"{version}: validation MAE {score}")
