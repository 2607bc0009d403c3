"""Retraining the predictor runs as a real Celery task in a worker process (embedded broker and
Redis), reading the catalog from and writing the new version to the same database."""
import pytest

from catalog.models import PredictorVersion
from tests.unit.catalog.predictors.conftest import TINY
from tests.unit.catalog.predictors.db_slice import load_slice

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker_retrains_the_predictor(worker, settings):
    load_slice()
    result = worker.send_task("catalog.tasks.predictor_retrain",
                              kwargs={"architecture": "feedforward", "hyperparameters": TINY})
    try:
        version_id = result.get(timeout=180)
    except Exception as exc:  # show what the worker said, whatever went wrong
        pytest.fail(f"{worker.broker_name}: {exc!r}\n{worker.worker_log.read_text()}")

    version = PredictorVersion.objects.get(pk=version_id)
    assert version.status == "active" and version.architecture == "feedforward"
    assert version.training_data["workloads"] == 11
    weights = worker_var(worker) / "predictors" / version.weights_file
    assert weights.exists()
    assert worker.worker_process.poll() is None


def worker_var(worker):
    """The var/ folder the spawn fixture gave the worker (the log sits beside it)."""
    return worker.worker_log.parent / "var"
