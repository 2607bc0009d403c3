"""Promotion: a retrained predictor must be no worse on held-out throughput of the GPU types that changed."""
import numpy as np
import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.models import GpuType, Measurement, PredictionRecord, PredictorVersion
from catalog.predictors import CatalogData
from catalog.predictors.features import WorkloadFeatures
from catalog.predictors.promotion import PROMOTION_TOLERANCE, held_out, hide, refusal
from catalog.services import predictors as services

from .db_slice import OBSERVED
from .test_services import slice_ as slice_, var as var  # fixtures, `as` marks them re-exported

pytestmark = pytest.mark.django_db


def train():
    return services.predictor_train(architecture="structured")


def add_a100_rows(workloads, factor):
    """a100 rows of `factor(name)` x the workload's v100 throughput at the same configuration."""
    a100 = GpuType.objects.create(**next(d for d in GPU_TYPE_DEFAULTS if d.name == "a100").model_fields())
    rows = []
    for m in Measurement.objects.filter(gpu_type__name="v100", partner__isnull=True).select_related("workload"):
        if m.workload.name in workloads:
            rows.append(Measurement(workload=m.workload, gpu_type=a100, num_gpus=m.num_gpus,
                                    consolidated=m.consolidated, throughput=m.throughput * factor(m.workload.name),
                                    source="profiling", observed_at=OBSERVED))
    Measurement.objects.bulk_create(rows)


def test_a100_row_of_one_batch_size_that_makes_the_other_worse_is_refused(slice_):
    """The issue's case: ResNet-18 at batch 32 measured 3x a V100 on a new type, batch 64 1.3x:
    a predictor that learned batch 32 there predicts batch 64 from it, worse than the datasheet."""
    active = train()
    add_a100_rows({"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"},
                  lambda name: 3.0 if "32" in name else 1.3)
    before = {v.pk: (v.status, v.metrics) for v in PredictorVersion.objects.all()}
    records = Measurement.objects.count()
    candidate = train()
    check = candidate.metrics["throughput_check"]
    assert check["gpu_types"] == ["a100"] and check["held_out"] == {"a100": ["ResNet-18 (batch size 64)"]}
    assert check["against"] == active.pk
    assert check["candidate"]["isolated_mape"] > check["active"]["isolated_mape"] + PROMOTION_TOLERANCE
    candidate.refresh_from_db(), active.refresh_from_db()
    assert (candidate.status, active.status) == ("candidate", "active")
    reason = candidate.metrics["promotion"]["reason"]
    assert candidate.metrics["promotion"]["promoted"] is False
    for side in ("candidate", "active"):  # both scores in the reason
        assert f"{check[side]['isolated_mape']:.1%}" in reason
    # nothing else written: the active version as it was, no record, no prediction
    assert {v.pk: (v.status, v.metrics) for v in PredictorVersion.objects.exclude(pk=candidate.pk)} == before
    assert Measurement.objects.count() == records and not PredictionRecord.objects.exists()
    with pytest.raises(services.PredictorPromotionRefused, match="held-out throughput on a100"):
        services.predictor_promote(version=candidate)
    active.refresh_from_db()
    assert active.status == "active"
    assert reason.endswith("(tolerance 1%); not promoted")


def test_the_admin_lists_why_a_candidate_was_not_promoted(slice_, client, django_user_model):
    train()
    add_a100_rows({"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"},
                  lambda name: 3.0 if "32" in name else 1.3)
    candidate = train()
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root"))
    listing = client.get("/admin/catalog/predictorversion/").content.decode()
    assert "held-out throughput on a100" in listing and "promoted" in listing
    assert f"{candidate.metrics['throughput_check']['active']['isolated_mape']:.1%}" in listing


def test_rows_that_teach_the_new_type_are_promoted(slice_, full_catalog):
    """a100 measured at 2.5x a V100 for every workload and configuration: the candidate learns
    the type from the other workloads' rows and beats the datasheet carry-over."""
    active = train()
    add_a100_rows(set(full_catalog.workloads), lambda name: 2.5)
    candidate = train()
    check = candidate.metrics["throughput_check"]
    assert check["gpu_types"] == ["a100"] and len(check["held_out"]["a100"]) >= 3
    assert check["candidate"]["isolated_mape"] <= check["active"]["isolated_mape"]
    assert check["candidate"]["multi_gpu_mape"] is not None and check["active"]["multi_gpu_mape"] is not None
    assert check["candidate"]["multi_gpu_mape"] <= check["active"]["multi_gpu_mape"] + PROMOTION_TOLERANCE
    candidate.refresh_from_db(), active.refresh_from_db()
    assert (candidate.status, active.status) == ("active", "retired")
    assert candidate.metrics["promotion"] == {"promoted": True}


@pytest.mark.parametrize("fine_tune", [False, True])
def test_an_import_is_checked_by_the_same_rule(slice_, fine_tune):
    """An export of the version trained before the bad a100 rows, imported after them: as it
    is, it knows no a100 (the datasheet) and is no worse than the active one, also refitted
    without the held-out row; fine-tuned on the local catalog, it learns the misleading row."""
    data = services.predictor_export(version=train())
    add_a100_rows({"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"},
                  lambda name: 3.0 if "32" in name else 1.3)
    imported = services.predictor_import(data=data, fine_tune=fine_tune, source="other.pt")
    check = imported.metrics["throughput_check"]
    assert check["held_out"] == {"a100": ["ResNet-18 (batch size 64)"]}
    assert imported.metrics["promotion"]["promoted"] is not fine_tune
    assert (check["candidate"]["isolated_mape"] > check["active"]["isolated_mape"]) is fine_tune


def test_a_check_against_another_version_is_refused(slice_):
    first = train()
    add_a100_rows({"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"}, lambda name: 2.0)
    candidate = train()
    services.predictor_rollback(version=first)  # not the version it was checked against any more
    PredictorVersion.objects.exclude(pk__in=[first.pk, candidate.pk]).delete()
    other = PredictorVersion.objects.get(pk=candidate.pk)
    other.metrics = {**other.metrics, "throughput_check": {**other.metrics["throughput_check"], "against": -1}}
    other.save()
    with pytest.raises(services.PredictorPromotionRefused, match="retrain to compare"):
        services.predictor_promote(version=other)


def test_no_new_measurements_means_nothing_to_check(slice_):
    train()
    second = train()
    assert second.metrics["throughput_check"]["gpu_types"] == [] and second.status == "active"


def check(candidate, active, tolerance=PROMOTION_TOLERANCE):
    return {"gpu_types": ["a100"], "rows": 4, "tolerance": tolerance,
            "candidate": dict(zip(("isolated_mape", "multi_gpu_mape"), candidate)),
            "active": dict(zip(("isolated_mape", "multi_gpu_mape"), active))}


def test_refusal_both_ways_with_the_tolerance():
    assert refusal(check((0.20, 0.30), (0.20, 0.30))) is None
    assert refusal(check((0.209, 0.30), (0.20, 0.30))) is None  # within 1 point
    assert "isolated mape 21.2% vs the active's 20.0%" in refusal(check((0.212, 0.30), (0.20, 0.30)))
    assert "multi gpu mape 35.0% vs the active's 30.0%" in refusal(check((0.10, 0.35), (0.20, 0.30)))
    assert refusal(check((0.10, None), (0.20, None))) is None  # no multi-GPU row held out
    assert refusal(check((None, None), (None, None))) is None


def _catalog():
    names = ["A", "B", "C", "D", "E"]
    configs = [("t4", 1, True), ("t4", 2, True), ("v100", 1, True)]
    tau = np.array([[1.0, 1.5, 2.0], [1.0, np.nan, 2.0], [1.0, 1.5, 2.0], [np.nan, np.nan, 2.0], [1.0, 1.8, 2.0]])
    features = [WorkloadFeatures(n, "F", 32, None, None, None, None, None) for n in names]
    return CatalogData(names, features, ["t4", "v100"], configs, tau, np.full((5, 5, 2), np.nan),
                       np.zeros((5, 5, 2), dtype=int))


def test_held_out_rows_are_every_third_workload_of_a_changed_type():
    catalog = _catalog()
    assert held_out(catalog, ["t4", "h100"]) == {"t4": ["B"]}  # t4's A, B, C, E: the second (stride 3)
    assert held_out(catalog, ["v100"]) == {"v100": ["B", "E"]}
    hidden = hide(catalog, {"t4": ["B", "E"]})
    assert np.isnan(hidden.tau[4, :2]).all() and hidden.tau[4, 2] == 2.0 and hidden.tau[0, 1] == 1.5


def test_a_type_left_without_rows_is_dropped_as_if_never_measured():
    catalog = _catalog()
    hidden = hide(catalog, {"t4": ["A", "B", "C", "E"]})
    assert hidden.gpu_types == ["v100"] and hidden.configs == [("v100", 1, True)] and hidden.rho.shape == (5, 5, 1)
