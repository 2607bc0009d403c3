"""The power-limit model: Zeus's measured curves read back, interpolated, and the fitted model elsewhere."""
import csv
import statistics

import pytest

from catalog.predictors.power import ZEUS_DIR
from catalog.predictors.power_limits import default_model, fit, leave_one_network_out

RESNET = "ResNet-50 (batch size 64)"


@pytest.fixture(scope="module")
def model():
    return default_model()


def _zeus_v100_resnet64():
    """Median over optimisers of Zeus's own numbers, normalised at its highest limit (250 W)."""
    runs = {}
    with open(ZEUS_DIR / "summary_power_v100.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["network"] == "resnet50" and row["batch_size"] == "64":
                runs.setdefault(row["optimizer"], {})[float(row["power_limit"])] = (
                    float(row["time_per_epoch"]), float(row["average_power"]))
    return runs


def test_a_measured_limit_reads_back_zeus_exactly(model):
    runs = _zeus_v100_resnet64()
    speed = statistics.median(r[250.0][0] / r[175.0][0] for r in runs.values())
    power = statistics.median(r[175.0][1] / r[250.0][1] for r in runs.values())
    # The model's fraction is of GOGH's V100 default (300 W): 175/250 of Zeus's default is 210 W.
    got = model.at_power_limit(RESNET, "v100", 300 * 175 / 250)
    assert got == pytest.approx((speed, power), rel=1e-9)


def test_between_measured_limits_the_curve_is_interpolated(model):
    low, high = model.at_power_limit(RESNET, "v100", 180.0), model.at_power_limit(RESNET, "v100", 210.0)
    middle = model.at_power_limit(RESNET, "v100", 195.0)
    assert middle[0] == pytest.approx((low[0] + high[0]) / 2)
    assert middle[1] == pytest.approx((low[1] + high[1]) / 2)
    assert low[0] < middle[0] < high[0]


def test_the_default_limit_and_above_are_the_default(model):
    assert model.at_power_limit(RESNET, "v100", 300.0) == (1.0, 1.0)
    assert model.at_power_limit("LM (batch size 20)", "k80", 160.0) == (1.0, 1.0)


def test_below_the_lowest_measured_fraction_nothing_is_offered(model):
    assert model.lowest_fraction["v100"] == pytest.approx(100 / 250)
    assert model.at_power_limit(RESNET, "v100", 300 * 0.39) is None
    assert model.at_power_limit("LM (batch size 20)", "v100", 300 * 0.39) is None
    assert model.at_power_limit("LM (batch size 20)", "k80", 150 * 0.3) is None  # below every type's lowest
    assert model.at_power_limit("LM (batch size 20)", "k80", 150 * 0.4) is not None


def test_bad_limits_and_unknown_types_are_none(model):
    for limit in (0.0, -10.0, float("nan"), float("inf")):
        assert model.at_power_limit(RESNET, "v100", limit) is None
    assert model.at_power_limit(RESNET, "no-such-type", 100.0) is None
    assert model.at_power_limit(RESNET, "no-such-type", 100.0, default_w=200.0) is not None


def test_a_job_drawing_well_below_the_limit_barely_slows(model):
    speed, power = model.at_power_limit("LM (batch size 20)", "v100", 200.0, draw_w=100.0)
    assert speed == pytest.approx(1.0, abs=0.02)
    assert power == pytest.approx(1.0, abs=0.05)
    # The same limit on a job drawing its full default limit costs speed.
    bound, _ = model.at_power_limit("LM (batch size 20)", "v100", 200.0)
    assert bound < 0.95


def test_the_fitted_model_slows_monotonically_and_is_one_at_the_default(model):
    previous = (0.0, 0.0)
    for fraction in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        speed, power = model.model.at(fraction, 0.9)
        assert speed >= previous[0] and power >= previous[1]
        previous = (speed, power)
    assert previous == pytest.approx((1.0, 1.0))


def test_leave_one_network_out_error_is_computed_per_network(model):
    errors = leave_one_network_out(model.curves)
    assert set(errors) == {"resnet50", "shufflenetv2", "deepspeech2", "ncf", "bert_base_uncased"}
    for e in errors.values():
        assert e["points"] > 0
        assert 0 < e["speed"] < 30 and 0 < e["power"] < 30
    # Leaving a network out changes the fit: the held-out error is not the in-sample one.
    assert fit(model.curves, leave_out="resnet50") != model.model


def test_the_optimisers_predictions_answer_at_a_limit_with_the_measured_draw(model):
    from catalog.measurement_record import MeasurementRecord
    from scheduler.optimizer.catalog_predictions import CatalogPredictions
    from scheduler.predictions import LearnedPredictions

    rows = [MeasurementRecord(workload="LM (batch size 20)", gpu_type="v100", num_gpus=1, consolidated=True,
                              partner=None, throughput=10.0, power_w=100.0)]
    catalog = CatalogPredictions(rows)
    expected = model.at_power_limit("LM (batch size 20)", "v100", 200.0, draw_w=100.0)
    assert catalog.at_power_limit("LM (batch size 20)", "v100", 200.0) == expected
    assert LearnedPredictions(catalog, {}).at_power_limit("LM (batch size 20)", "v100", 200.0) == expected
    assert expected != model.at_power_limit("LM (batch size 20)", "v100", 200.0)  # the draw was used
    # The control plane's rounds give the draws known without telemetry (the readings were taken
    # with them), whatever the catalog's mean with telemetry says.
    known = LearnedPredictions(catalog, {}, draws={("LM (batch size 20)", "v100"): 250.0})
    assert known.at_power_limit("LM (batch size 20)", "v100", 200.0) == model.at_power_limit(
        "LM (batch size 20)", "v100", 200.0, draw_w=250.0) != expected
    assert LearnedPredictions(catalog, {}, draws={}).at_power_limit("LM (batch size 20)", "v100", 200.0) == (
        model.at_power_limit("LM (batch size 20)", "v100", 200.0))
    assert known.power_w("LM (batch size 20)", "v100") == 100.0  # the draw it plans power with stays the catalog's
