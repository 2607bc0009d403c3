"""Lifecycle of the predictors: train, promote, roll back, export, import, predict, refine.

Training runs outside a transaction (it takes seconds to minutes and must not hold the
database); every write it ends with is one atomic service call. A candidate becomes active
only if its validation MAE (co-location) is no worse than the active version's and its
held-out throughput on the GPU types measured since the active version was trained is no worse
either (catalog.predictors.promotion); otherwise it stays a candidate with the reason in its
metrics. Rolling back is the operator's decision and skips both checks.
"""
import io
import logging
import math

import numpy as np
import torch
from django.conf import settings
from django.db import transaction

from catalog.predictors import ARCHITECTURES, Observation, PerformancePredictor, UnknownGpuType, estimate_unmeasured
from catalog.predictors.bench import score_p1
from catalog.predictors.promotion import refusal, throughput_check
from catalog.predictors.scaling import ScalingFit, fit_scaling, multi_gpu_log_sd, multi_gpu_tau

from .. import live
from ..models import GpuType, Measurement, PredictionRecord, PredictorName, PredictorStatus, PredictorVersion, Workload
from .predictors_store import (
    PredictorFileError,
    catalog_snapshot,
    weights_discard,
    weights_load,
    weights_save,
    workload_features,
)

log = logging.getLogger(__name__)

EXPORT_FORMAT = "gogh-predictor/1"
EXPORT_KEYS = ("format", "name", "architecture", "hyperparameters", "metrics", "state")
#: Every VALIDATION_STRIDE-th workload is held out to score a candidate (at least one).
VALIDATION_STRIDE = 6


class PredictorPromotionRefused(Exception):
    """The candidate scores worse than the active version."""


class NoActivePredictor(LookupError):
    """No version of the predictor is active yet: train one (train_predictor)."""


class NothingToTrainOn(ValueError):
    """The catalog has too few isolated throughputs to train on (a fresh install, no data yet)."""


def predictor_train(*, name: str = "p1", architecture: str | None = None, hyperparameters: dict | None = None,
                    parent: PredictorVersion | None = None, note: str = "") -> PredictorVersion:
    """Train on the catalog, score on held-out workloads, store a candidate and try to promote it.

    The score comes from a model fitted without the held-out workloads (every record involving
    them hidden); the stored model is then fitted on the whole catalog, starting from
    `parent`'s weights when given (transfer learning).
    """
    catalog, snapshot = _training_catalog()
    params = {"architecture": architecture or settings.GOGH_PREDICTOR_ARCHITECTURE, **(hyperparameters or {})}
    held = _validation_workloads(catalog)
    init = weights_load(parent) if parent else None
    scorer = PerformancePredictor(**params).fit(catalog.without(held), init=init)
    metrics = score_p1(scorer, catalog, held)
    model = PerformancePredictor(**params).fit(catalog, init=init)
    metrics["validation_workloads"] = held
    metrics.update(_throughput_check(model, name, catalog))
    return _version_store(model=model, name=name, metrics=metrics, snapshot=snapshot, parent=parent, note=note)


def _training_catalog():
    """catalog_snapshot(), refused (NothingToTrainOn) when fewer than two workloads have an
    isolated throughput: held-out scoring needs one to fit on and one to score."""
    catalog, snapshot = catalog_snapshot()
    measured = int(np.isfinite(catalog.tau).any(axis=1).sum()) if catalog.tau.size else 0
    if measured < 2:
        raise NothingToTrainOn(
            f"nothing to train on: the catalog has {snapshot['records']} measurement(s) and {measured} workload(s) "
            "measured alone (at least 2 are needed); load the reference catalog (manage.py load_reference_catalog) "
            "or import measurements (manage.py import_measurements) first")
    return catalog, snapshot


def _validation_workloads(catalog) -> list[str]:
    return catalog.workloads[VALIDATION_STRIDE // 2::VALIDATION_STRIDE] or catalog.workloads[-1:]


def _throughput_check(model, name: str, catalog) -> dict:
    """{"throughput_check": ...}: the candidate `model` against the active version of `name` on
    held-out rows of the GPU types measured since that version was trained, tagged with the
    active version's id; {} when none is active (nothing to be worse than)."""
    active = PredictorVersion.objects.filter(name=name, status=PredictorStatus.ACTIVE).first()
    if active is None or not catalog.workloads:
        return {}
    try:
        active_model = weights_load(active)
    except PredictorFileError as exc:  # a broken active version: nothing to compare with
        log.warning("throughput check of a new %s version skipped: %s", name, exc)
        return {}
    check = throughput_check(model, active_model, catalog, _changed_gpu_types(active, active_model, catalog),
                             refit=lambda m, data: PerformancePredictor(**m.get_params()).fit(data))
    return {"throughput_check": {**check, "against": active.pk}}


def _changed_gpu_types(active: PredictorVersion, active_model, catalog) -> list[str]:
    """The types with isolated measurements newer than the active version's snapshot, and those
    its model does not know; every type when its snapshot has no measurement id (imported)."""
    seen = active.training_data.get("measurements_max_id")
    if seen is None:
        return list(catalog.gpu_types)
    new = Measurement.objects.filter(id__gt=seen, partner__isnull=True).values_list("gpu_type__name", flat=True)
    return sorted(set(new.distinct()) | (set(catalog.gpu_types) - set(active_model.catalog_.gpu_types)))


def _version_store(*, model, name, metrics, snapshot, parent, note) -> PredictorVersion:
    """Write the weights file, then the row; a failed insert (or promotion) removes the file, so
    failed attempts leave no orphan under var/predictors/."""
    file_name, sha256 = weights_save(model, name)
    try:
        return _version_create(model=model, name=name, metrics=metrics, snapshot=snapshot, parent=parent,
                               note=note, file_name=file_name, sha256=sha256)
    except BaseException:
        weights_discard(file_name)
        raise


@transaction.atomic
def _version_create(*, model, name, metrics, snapshot, parent, note, file_name, sha256) -> PredictorVersion:
    """The row, promoted when it scores no worse than the active version (a version scored
    None, for want of co-location records, is promoted only when none is active); the outcome,
    with the refusal's reason, is kept in its metrics["promotion"]."""
    version = PredictorVersion.objects.create(
        name=name, architecture=model.architecture, hyperparameters=model.get_params(), training_data=snapshot,
        metrics=metrics, weights_file=file_name, weights_sha256=sha256, parent=parent, note=note,
    )
    live.predictor_versions_changed([version.pk])
    try:
        predictor_promote(version=version)
        outcome = {"promoted": True}
    except PredictorPromotionRefused as exc:  # stays a candidate, the reason with its scores
        outcome = {"promoted": False, "reason": str(exc)}
    version.metrics = {**version.metrics, "promotion": outcome}
    version.save(update_fields=["metrics"])
    return version


@transaction.atomic
def predictor_promote(*, version: PredictorVersion) -> PredictorVersion:
    active = PredictorVersion.objects.select_for_update().filter(name=version.name, status=PredictorStatus.ACTIVE)
    active = active.exclude(pk=version.pk).first()
    if active is not None:
        new, old = version.val_mae, active.val_mae
        if new is None or (old is not None and new > old):
            raise PredictorPromotionRefused(
                f"{version} has validation MAE {new}, worse than the active {active} ({old}); not promoted"
            )
        _check_throughput(version, active)
        active.status = PredictorStatus.RETIRED
        active.save(update_fields=["status"])
        live.predictor_versions_changed([active.pk])
    version.status = PredictorStatus.ACTIVE
    version.save(update_fields=["status"])
    live.predictor_versions_changed([version.pk])
    return version


def _check_throughput(version: PredictorVersion, active: PredictorVersion) -> None:
    """PredictorPromotionRefused when the version's throughput check (taken at training) finds it
    worse than `active`, or was taken against another version than `active` (a promotion in
    between): it cannot be shown no worse. A version stored without a check (none was active,
    or stored before the check existed) passes."""
    check = version.metrics.get("throughput_check")
    if check is None:
        return
    if check["against"] != active.pk:
        raise PredictorPromotionRefused(f"{version} was checked against #{check['against']}, but {active} is "
                                        "active now; retrain to compare with it; not promoted")
    reason = refusal(check)
    if reason:
        raise PredictorPromotionRefused(f"{version}: {reason}; not promoted")


@transaction.atomic
def predictor_rollback(*, version: PredictorVersion) -> PredictorVersion:
    """Make an earlier version active again, whatever its score (the admin's action)."""
    retired = (
        PredictorVersion.objects.select_for_update()
        .filter(name=version.name, status=PredictorStatus.ACTIVE)
        .exclude(pk=version.pk)
    )
    retired_ids = list(retired.values_list("pk", flat=True))
    retired.update(status=PredictorStatus.RETIRED)
    version.status = PredictorStatus.ACTIVE
    version.save(update_fields=["status"])
    live.predictor_versions_changed([*retired_ids, version.pk])
    return version


def predictor_export(*, version: PredictorVersion) -> bytes:
    """The version's weights and metadata as one file another cluster can import."""
    buffer = io.BytesIO()
    torch.save({
        "format": EXPORT_FORMAT, "name": version.name, "architecture": version.architecture,
        "hyperparameters": version.hyperparameters, "metrics": _plain(version.metrics),
        "state": weights_load(version).state_dict(),
    }, buffer)
    return buffer.getvalue()


def predictor_import(*, data: bytes, fine_tune: bool = True, source: str = "") -> PredictorVersion:
    """Store an exported version as a candidate, promoted by the same rule as a trained one.

    With fine_tune it is first trained on the local catalog; without, it is scored as it is on
    the local validation workloads (hidden from its snapshot), never on the score the file states
    about itself. A malformed file is one ValueError "SOURCE: not a GOGH predictor export
    (reason)" and nothing is stored."""
    imported, payload = _read_export(data, source or "the file")
    name = payload["name"]
    if not fine_tune:
        catalog, _ = catalog_snapshot()
        held = _validation_workloads(catalog)
        metrics = {**_score_imported(imported, catalog, held), "validation_workloads": held,
                   "exported_metrics": payload["metrics"], **_throughput_check(imported, name, catalog)}
        return _version_store(model=imported, name=name, metrics=metrics, snapshot={"imported": source},
                              parent=None, note=f"imported from {source}"[:200])
    catalog, snapshot = _training_catalog()
    params = imported.get_params()
    held = _validation_workloads(catalog)
    metrics = score_p1(PerformancePredictor(**params).fit(catalog.without(held), init=imported), catalog, held)
    model = PerformancePredictor(**params).fit(catalog, init=imported)
    metrics["validation_workloads"] = held
    metrics.update(_throughput_check(model, name, catalog))
    return _version_store(model=model, name=name, metrics=metrics, snapshot=snapshot, parent=None,
                          note=f"fine-tuned from import {source}"[:200])


def _read_export(data: bytes, source: str) -> tuple[PerformancePredictor, dict]:
    """(the model, the payload) of an export file, every part checked before anything is stored."""
    def refused(reason: str) -> ValueError:
        return ValueError(f"{source}: not a GOGH predictor export ({reason})")

    try:
        payload = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:  # any byte string: torch raises EOFError, UnpicklingError, RuntimeError...
        detail = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else "no detail"
        raise refused(f"unreadable: {type(exc).__name__}: {detail}") from None
    if not isinstance(payload, dict):
        raise refused(f"a {type(payload).__name__}, not a dictionary")
    if payload.get("format") != EXPORT_FORMAT:
        raise refused(f"format {str(payload.get('format'))[:40]!r}, expected {EXPORT_FORMAT!r}")
    missing = [key for key in EXPORT_KEYS if key not in payload]
    if missing:
        raise refused(f"no {', '.join(missing)}")
    if not isinstance(payload["name"], str) or payload["name"] not in PredictorName.values:
        raise refused(f"name {str(payload['name'])[:40]!r} is not one of {', '.join(PredictorName.values)}")
    if payload["architecture"] not in ARCHITECTURES:
        raise refused(f"architecture {str(payload['architecture'])[:40]!r} is not one of {', '.join(ARCHITECTURES)}")
    if not isinstance(payload["hyperparameters"], dict):
        raise refused("hyperparameters are not a dictionary")
    metrics = payload["metrics"]
    if not isinstance(metrics, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for k, v in metrics.items()):
        raise refused("metrics must map names to finite numbers")
    try:
        model = PerformancePredictor.from_state_dict(payload["state"])
        if model.architecture != payload["architecture"]:
            raise ValueError(f"its state is a {model.architecture} model, not {payload['architecture']}")
        prediction = model.predict(model.catalog_.features[0])
    except (ArithmeticError, LookupError, RuntimeError, TypeError, ValueError) as exc:
        raise refused(str(exc)[:300]) from None
    if not (np.isfinite(prediction.rho).all() and np.isfinite(prediction.tau).all()):
        raise refused("its predictions are not finite numbers")
    return model, payload


def _score_imported(model: PerformancePredictor, catalog, held: list[str]) -> dict:
    """P1 scores of an imported model as it is, the way a trained candidate's are taken: on the
    local validation workloads, hidden from the model's own snapshot first (the other cluster
    may have measured them, and a model predicting its own records would score near 0 and block
    every later retrain). Nothing to score (no local data) gives None scores."""
    if held and set(model.catalog_.workloads) - set(held):
        return score_p1(model.without(held), catalog, held)
    train_mae = model.train_mae_ if math.isfinite(model.train_mae_) else None
    return {"val_mae": None, "iso_mape": {"zero_shot": None, "one_shot": None}, "train_mae": train_mae}


def predictor_retrain_if_due(*, name: str = "p1", after_records: int | None = None,
                             hyperparameters: dict | None = None) -> PredictorVersion | None:
    """Retrain when `after_records` measurements arrived since the newest version was trained."""
    threshold = settings.GOGH_PREDICTOR_RETRAIN_AFTER_RECORDS if after_records is None else after_records
    newest = PredictorVersion.objects.filter(name=name).first()
    seen = (newest.training_data.get("measurements_max_id") or 0) if newest else 0
    if newest is not None and Measurement.objects.filter(id__gt=seen).count() < threshold:
        return None
    return predictor_train(name=name, hyperparameters=hyperparameters)


def active_version(name: str) -> PredictorVersion:
    version = PredictorVersion.objects.filter(name=name, status=PredictorStatus.ACTIVE).first()
    if version is None:
        raise NoActivePredictor(f"no active {name} predictor; run `manage.py train_predictor --name {name}`")
    return version


@transaction.atomic
def prediction_create(*, workload: Workload, job_id: int | None = None, shadow: bool = False,
                      observations: list[dict] | None = None) -> PredictionRecord:
    """P1 (no observations) or P2 (replaying `observations`) estimates for a job, stored."""
    name = "p2" if observations else "p1"
    try:
        version = active_version(name)
    except NoActivePredictor:
        version = active_version("p1")  # one network serves both until a separate P2 is trained
    model = weights_load(version)
    features = workload_features(workload)
    job = model.job(features)
    # A type the catalog has but the model was trained without (a new A100) is estimated from
    # specs below, where its observations count; any other unknown type is the model's error.
    untrained = set(GpuType.objects.exclude(name__in=model.catalog_.gpu_types).values_list("name", flat=True))
    for fields in observations or []:
        if fields["gpu_type"] not in untrained:
            job.observe(Observation(**fields))
    prediction = job.prediction()
    estimates = {**_estimates(prediction), "observed": len(observations or [])}
    _add_unmeasured_types(estimates, prediction, features, observations or [], sorted(untrained),
                          fit_scaling(model.catalog_))
    return PredictionRecord.objects.create(workload=workload, job_id=job_id, version=version, shadow=shadow,
                                           observations=observations or [], estimates=estimates)


@transaction.atomic
def prediction_refine(*, measurement: Measurement, job_id: int) -> PredictionRecord:
    """P2 on new telemetry of a running job: its latest prediction replayed with this observation
    added (P1 plus the observation when it has none yet, e.g. submitted before any predictor was
    trained). The job's records are locked, so two refinements at once both count. A running job
    was dispatched, so the record is live (not shadow) whatever its P1 was."""
    latest = (
        PredictionRecord.objects.select_for_update().filter(job_id=job_id).order_by("-created_at", "-id").first()
    )
    observation = {
        "gpu_type": measurement.gpu_type.name, "throughput": measurement.throughput,
        "partner": measurement.partner.name if measurement.partner else None,
        "partner_throughput": measurement.partner_throughput, "num_gpus": measurement.num_gpus,
        "consolidated": measurement.consolidated,
    }
    return prediction_create(workload=measurement.workload, job_id=job_id,
                             observations=[*(latest.observations if latest else []), observation])


def _estimates(prediction) -> dict:
    """The prediction as stored. Lists are copies: _add_unmeasured_types appends to them, and
    appending to the prediction's own gpu_types made every later spec estimate see the
    first added type as measured (and fail), so only one unmeasured type was ever estimated."""
    return {
        "partners": list(prediction.partners), "gpu_types": list(prediction.gpu_types),
        "configs": [list(c) for c in prediction.configs],
        "rho": prediction.rho.round(4).tolist(), "rho_std": prediction.rho_std.round(4).tolist(),
        "tau": prediction.tau.round(4).tolist(), "tau_std": prediction.tau_std.round(4).tolist(),
        "low_confidence": prediction.low_confidence,
    }


def _add_unmeasured_types(
    estimates: dict, prediction, features, observations: list[dict], untrained: list[str], fit: ScalingFit
) -> None:
    """Extend `estimates` to the catalog's GPU types the predictor was trained without (`untrained`: a T4,
    A100, H100 or H200 nobody has measured yet), from datasheet specs (catalog.predictors.gpu_specs):
    single-GPU throughput and co-location fractions, marked in `unmeasured_gpu_types`; then give every
    type the multi-GPU configurations it has no estimate for, from its 1-GPU estimate and the
    communication times `fit` learned (catalog.predictors.scaling), listed in `scaled_configs`. The
    job's own isolated observations on an added configuration replace the guess. Types without
    specs are left out, with a warning in the log: rounds then have nothing to plan with there."""
    added = []
    for gpu_type in untrained:
        try:
            guess = estimate_unmeasured(prediction, features, gpu_type)
        except (UnknownGpuType, ValueError) as exc:
            log.warning("no estimate for %s on GPU type %s: %s", features.name, gpu_type, exc)
            continue
        _add_config(estimates, [gpu_type, 1, True], guess.tau, guess.tau_std, observations)
        for row, std_row, rho, rho_std in zip(estimates["rho"], estimates["rho_std"], guess.rho, guess.rho_std):
            row.append(round(float(rho), 4))
            std_row.append(round(float(rho_std), 4))
        estimates["gpu_types"].append(gpu_type)
        added.append(gpu_type)
    estimates["unmeasured_gpu_types"] = added
    estimates["scaled_configs"] = _add_multi_gpu(estimates, features, observations, fit)


def _add_multi_gpu(estimates: dict, features, observations: list[dict], fit: ScalingFit) -> list[list]:
    """The (type, GPUs, consolidated) configurations of fit.setups each type lacks, scaled from
    the type's 1-GPU estimate (catalog.predictors.scaling); the ones added."""
    known = {tuple(c) for c in estimates["configs"]}
    singles = {c[0]: i for i, c in enumerate(estimates["configs"]) if c[1] == 1}
    added = []
    for gpu_type in estimates["gpu_types"]:
        tau_1, log_sd = estimates["tau"][singles[gpu_type]], estimates["tau_std"][singles[gpu_type]]
        for num_gpus, consolidated in fit.setups:
            if (gpu_type, num_gpus, consolidated) in known:
                continue
            tau = multi_gpu_tau(tau_1, fit, features, gpu_type, num_gpus, consolidated)
            if tau is None:
                continue
            _add_config(estimates, [gpu_type, num_gpus, consolidated], tau, multi_gpu_log_sd(log_sd, num_gpus),
                        observations)
            added.append([gpu_type, num_gpus, consolidated])
    return added


def _add_config(estimates: dict, config: list, tau: float, tau_std: float, observations: list[dict]) -> None:
    """One configuration's throughput appended: the job's own isolated observations there (their
    mean, exact) or else the guess."""
    gpu_type, num_gpus, consolidated = config
    seen = [o["throughput"] for o in observations
            if o["gpu_type"] == gpu_type and o.get("partner") is None and o.get("num_gpus", 1) == num_gpus
            and (num_gpus == 1 or o.get("consolidated", True) == consolidated)]
    tau, tau_std = (sum(seen) / len(seen), 0.0) if seen else (tau, tau_std)
    estimates["configs"].append(config)
    estimates["tau"].append(round(tau, 4))
    estimates["tau_std"].append(round(tau_std, 4))


def _plain(metrics: dict) -> dict:
    """Metrics without lists of names, so torch.load(weights_only=True) reads the export."""
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}
