"""simulate's policies learn each workload's draw and utilization at the default limit from
telemetry, over the catalog they plan with (draws.TelemetryDraws), as the control plane's catalog
does from its measurements."""
import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.simulation.draws import TelemetryDraws

W = "ResNet-18 (batch size 32)"


def catalog(power_w=None, utilization=None) -> CatalogPredictions:
    return CatalogPredictions([MeasurementRecord(workload=W, gpu_type="v100", throughput=10.0, power_w=power_w,
                                                 utilization=utilization)])


def test_before_telemetry_the_catalog_answers_and_after_the_observed_mean():
    draws = TelemetryDraws(catalog())
    assert draws.power_w(W, "v100") is None and draws.utilization(W, "v100") is None
    assert draws.tau(W, "v100", 1, True) == 10.0  # the rest is the catalog's
    draws.add(W, "v100", 250.4, 0.9)
    draws.add(W, "v100", 260.0, 0.8)
    assert draws.power_w(W, "v100") == 255  # to the watt
    assert draws.utilization(W, "v100") == pytest.approx(0.85)
    assert draws.power_w(W, "k80") is None and draws.power_w("other", "v100") is None


def test_the_catalogs_own_mean_counts_as_one_value():
    draws = TelemetryDraws(catalog(power_w=200.0, utilization=0.5))
    assert draws.power_w(W, "v100") == 200 and draws.utilization(W, "v100") == 0.5
    draws.add(W, "v100", 300.0, 1.0)
    assert draws.power_w(W, "v100") == 250 and draws.utilization(W, "v100") == pytest.approx(0.75)


def test_what_no_gpu_reports_is_not_folded_in():
    draws = TelemetryDraws(catalog())
    for power_w, utilization in ((None, None), (0.0, -0.1), (-5.0, 1.5)):
        draws.add(W, "v100", power_w, utilization)
    assert draws.power_w(W, "v100") is None and draws.utilization(W, "v100") is None
    draws.add(W, "v100", None, 0.7)  # a window without power still has its utilization
    assert draws.power_w(W, "v100") is None and draws.utilization(W, "v100") == 0.7


def test_another_catalog_keeps_what_telemetry_saw():
    draws = TelemetryDraws(catalog())
    draws.add(W, "v100", 250.0, 0.9)
    moved = draws.with_catalog(catalog(power_w=150.0))
    assert moved.power_w(W, "v100") == 200 and moved.catalog is not draws.catalog
    assert draws.power_w(W, "v100") == 250
