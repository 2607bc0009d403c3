"""manage.py train_predictor: train a predictor from the catalog (cold start: the reference data)."""
from django.core.management.base import BaseCommand

from catalog.models import PredictorStatus, PredictorVersion
from catalog.predictors import ARCHITECTURES
from catalog.services.predictors import predictor_train


class Command(BaseCommand):
    help = ("Train a predictor version on the catalog's records, score it on held-out workloads and "
            "make it active if it scores no worse than the active version.")

    def add_arguments(self, parser):
        parser.add_argument("--name", choices=["p1", "p2"], default="p1")
        parser.add_argument("--architecture", choices=ARCHITECTURES)
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--if-none", action="store_true",
                            help="Do nothing when a version of this predictor is already active (cold start).")

    def handle(self, *args, name, architecture, epochs, if_none, **options):
        if if_none and PredictorVersion.objects.filter(name=name, status=PredictorStatus.ACTIVE).exists():
            self.stdout.write(f"an active {name} predictor exists; nothing to train")
            return
        version = predictor_train(name=name, architecture=architecture,
                                  hyperparameters={"epochs": epochs} if epochs else None)
        self.stdout.write(f"{version}: validation MAE {version.val_mae:.4f}")
