"""Celery tasks of the catalog's predictors: fetch by id, call a service, return ids.

Retraining runs nightly and when enough new records arrived (settings.CELERY_BEAT_SCHEDULE,
GOGH_PREDICTOR_*); inference for a new job is scheduler.tasks.job_predict (sent on submit); P2 refinement
is sent by scheduler.dispatch.progress when it stores a measurement of a running job.
"""
import logging

from celery import shared_task

from .models import Measurement
from .services.predictors import (
    NoActivePredictor,
    NothingToTrainOn,
    prediction_refine,
    predictor_retrain_if_due,
    predictor_train,
)

log = logging.getLogger(__name__)


@shared_task(name="catalog.tasks.predictor_retrain")
def predictor_retrain(
    name: str = "p1", architecture: str | None = None, hyperparameters: dict | None = None
) -> int | None:
    """Nightly (beat) or on demand: train a candidate; returns its id (active if it scored no
    worse), None (logged) while the catalog has nothing to train on."""
    try:
        return predictor_train(name=name, architecture=architecture, hyperparameters=hyperparameters).pk
    except NothingToTrainOn as exc:
        log.warning("predictor %s not retrained: %s", name, exc)
        return None


@shared_task(name="catalog.tasks.predictor_retrain_if_due")
def predictor_retrain_if_due_task(name: str = "p1") -> int | None:
    """Beat, frequently: retrain once GOGH_PREDICTOR_RETRAIN_AFTER_RECORDS new records are in;
    None when not due or (logged) while the catalog has nothing to train on."""
    try:
        version = predictor_retrain_if_due(name=name)
    except NothingToTrainOn as exc:
        log.warning("predictor %s not retrained: %s", name, exc)
        return None
    return version.pk if version else None


@shared_task(name="catalog.tasks.prediction_refine")
def prediction_refine_task(measurement_id: int, job_id: int) -> int | None:
    """P2 on a new telemetry measurement of a job: the refined PredictionRecord's id, None while
    no predictor is trained."""
    measurement = Measurement.objects.select_related("workload", "gpu_type", "partner").get(pk=measurement_id)
    try:
        return prediction_refine(measurement=measurement, job_id=job_id).pk
    except NoActivePredictor:
        return None
