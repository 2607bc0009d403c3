"""The Django shell of the predictors: versions, promotion, rollback, export/import, inference."""
import hashlib

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from catalog import tasks
from catalog.models import Measurement, PredictionRecord, PredictorVersion, Workload
from catalog.predictors import UnknownGpuType
from catalog.services import predictors as services
from catalog.services.predictors_store import weights_load

from .conftest import TINY
from .db_slice import load_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def var(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.GOGH_PREDICTOR_ARCHITECTURE = "feedforward"
    return tmp_path


@pytest.fixture
def slice_(var):
    return load_slice()


def train(**kwargs):
    return services.predictor_train(hyperparameters=TINY, **kwargs)


def test_training_stores_an_active_version_with_checked_weights(slice_, var):
    version = train()
    assert version.status == "active" and version.architecture == "feedforward"
    data = (var / "predictors" / version.weights_file).read_bytes()
    assert hashlib.sha256(data).hexdigest() == version.weights_sha256
    assert 0 <= version.val_mae <= 1 and version.metrics["validation_workloads"]
    assert version.training_data["records"] == Measurement.objects.count()
    assert version.hyperparameters["seed"] == TINY["seed"]


def test_training_is_deterministic(slice_):
    first, second = weights_load(train()), weights_load(train())
    features = first.features_of("LM (batch size 20)")
    np.testing.assert_array_equal(first.predict(features).rho, second.predict(features).rho)


def test_worse_candidate_is_not_promoted(slice_):
    active = train()
    PredictorVersion.objects.filter(pk=active.pk).update(metrics={"val_mae": 0.0001})
    candidate = train()
    assert candidate.status == "candidate"
    with pytest.raises(services.PredictorPromotionRefused, match="worse than the active"):
        services.predictor_promote(version=candidate)
    active.refresh_from_db()
    assert active.status == "active"


def test_rollback_makes_an_earlier_version_active(slice_):
    first = train()
    second = train()  # same score: no worse, so promoted
    first.refresh_from_db()
    assert (first.status, second.status) == ("retired", "active")
    services.predictor_rollback(version=first)
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.status, second.status) == ("active", "retired")


def test_export_then_import_gives_identical_predictions(slice_):
    version = train()
    data = services.predictor_export(version=version)
    imported = services.predictor_import(data=data, fine_tune=False, source="other-cluster.pt")
    features = weights_load(version).features_of("A3C")
    np.testing.assert_array_equal(weights_load(version).predict(features).rho,
                                  weights_load(imported).predict(features).rho)
    tuned = services.predictor_import(data=data, fine_tune=True, source="other-cluster.pt")
    assert "fine-tuned" in tuned.note and tuned.weights_sha256 != version.weights_sha256


def test_commands_export_and_import(slice_, tmp_path):
    train()
    out = tmp_path / "p1.pt"
    call_command("export_predictor", str(out))
    call_command("import_predictor", str(out), "--no-fine-tune")
    assert PredictorVersion.objects.count() == 2


def test_prediction_then_refinement_on_telemetry(slice_):
    workloads, types = slice_
    train()
    new = Workload.objects.create(name="ResNet-50 (batch size 48)", family="ResNet-50", batch_size=48)
    record = services.prediction_create(workload=new, job_id=7)
    assert record.job_id == 7 and record.estimates["low_confidence"]
    seen = Measurement.objects.create(
        workload=new, gpu_type=types["v100"], partner=workloads["A3C"],
        throughput=0.5, partner_throughput=1.0, source="telemetry", observed_at=timezone.now())
    refined = PredictionRecord.objects.get(pk=tasks.prediction_refine_task(seen.pk, 7))
    rho = np.array(refined.estimates["rho"])
    assert refined.job_id == 7 and refined.observations[0]["partner"] == "A3C" and ((rho >= 0) & (rho <= 1)).all()
    assert not refined.estimates["low_confidence"]


def test_observation_on_an_unknown_gpu_type_is_a_clear_error(slice_):
    workloads, _ = slice_
    train()
    with pytest.raises(UnknownGpuType, match="h100"):
        services.prediction_create(workload=workloads["A3C"], observations=[{"gpu_type": "h100", "throughput": 1.0}])


def test_no_active_predictor_is_a_clear_error(slice_):
    workloads, _ = slice_
    with pytest.raises(services.NoActivePredictor, match="train_predictor"):
        services.prediction_create(workload=workloads["A3C"])


def test_retraining_waits_for_enough_new_records(slice_):
    workloads, types = slice_
    train()
    assert services.predictor_retrain_if_due(after_records=2) is None
    for _ in range(2):
        Measurement.objects.create(workload=workloads["A3C"], gpu_type=types["v100"], throughput=7.0,
                                   source="telemetry", observed_at=timezone.now())
    retrained = services.predictor_retrain_if_due(after_records=2, hyperparameters=TINY)
    assert retrained is not None and PredictorVersion.objects.count() == 2


def test_structured_default_trains_exports_and_predicts(slice_):
    """The structured predictor (the default model) goes through the same lifecycle: stored,
    exported, imported (weights_only load) and used for a new job's prediction."""
    version = services.predictor_train(architecture="structured")
    assert version.status == "active" and 0 <= version.val_mae <= 1
    imported = services.predictor_import(data=services.predictor_export(version=version), fine_tune=False)
    features = weights_load(version).features_of("LM (batch size 10)")
    np.testing.assert_array_equal(weights_load(version).predict(features).rho,
                                  weights_load(imported).predict(features).rho)
    new = Workload.objects.create(name="LM (batch size 15)", family="LM", batch_size=15)
    record = services.prediction_create(workload=new)
    rho = np.array(record.estimates["rho"])
    assert record.estimates["low_confidence"]
    assert ((rho >= 0) & (rho <= 1)).all() and (np.array(record.estimates["tau"]) > 0).all()
