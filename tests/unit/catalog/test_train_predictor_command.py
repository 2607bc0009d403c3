"""manage.py train_predictor: a cold start trains once; --if-none leaves an active version alone;
a catalog with nothing to train on is a clear error, one without co-location trains unscored."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError

from catalog import tasks
from catalog.models import Measurement, PredictorVersion
from catalog.services import predictors as services

from .predictors.db_slice import load_slice

pytestmark = pytest.mark.django_db


def test_if_none_trains_only_on_a_cold_start(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    load_slice()
    out = io.StringIO()
    call_command("train_predictor", "--if-none", "--architecture", "structured", stdout=out)
    version = PredictorVersion.objects.get()
    assert version.status == "active" and "validation MAE" in out.getvalue()
    out = io.StringIO()
    call_command("train_predictor", "--if-none", stdout=out)
    assert PredictorVersion.objects.count() == 1 and "nothing to train" in out.getvalue()


def test_an_empty_catalog_is_a_clear_error_and_leaves_no_file(settings, tmp_path, caplog):
    settings.VAR_DIR = tmp_path
    with pytest.raises(CommandError, match="nothing to train on.*load the reference catalog"):
        call_command("train_predictor", "--architecture", "structured")
    assert tasks.predictor_retrain(architecture="structured") is None  # the nightly task logs, never crashes
    assert tasks.predictor_retrain_if_due_task() is None
    assert "not retrained: nothing to train on" in caplog.text
    assert PredictorVersion.objects.count() == 0 and not list(tmp_path.rglob("*.pt"))


def test_a_catalog_without_co_location_trains_with_no_score(settings, tmp_path):
    """An operator who never co-locates: the version has val_mae None (not NaN, which the
    database refused); it is promoted only when no version is active."""
    settings.VAR_DIR = tmp_path
    load_slice()
    Measurement.objects.exclude(partner=None).delete()
    out = io.StringIO()
    call_command("train_predictor", "--architecture", "structured", stdout=out)
    first = PredictorVersion.objects.get()
    assert first.status == "active" and first.val_mae is None and first.metrics["train_mae"] is None
    assert first.metrics["iso_mape"]["zero_shot"] > 0 and "validation MAE none" in out.getvalue()
    call_command("train_predictor", "--architecture", "structured", stdout=io.StringIO())
    second = PredictorVersion.objects.exclude(pk=first.pk).get()
    assert second.status == "candidate"


def test_a_failed_insert_leaves_no_weights_file(settings, tmp_path, monkeypatch):
    settings.VAR_DIR = tmp_path
    load_slice()

    def refuse(**kwargs):
        raise IntegrityError("CHECK constraint failed")

    monkeypatch.setattr(services, "_version_create", refuse)
    with pytest.raises(IntegrityError):
        services.predictor_train(architecture="structured")
    assert not list(tmp_path.rglob("*.pt"))


@pytest.mark.parametrize("epochs", ["0", "-5"])
def test_epochs_must_be_positive(epochs):
    with pytest.raises(CommandError, match="is not a whole number greater than 0"):
        call_command("train_predictor", "--epochs", epochs)
    assert PredictorVersion.objects.count() == 0
