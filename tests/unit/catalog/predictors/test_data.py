from datetime import UTC, datetime, timedelta

import numpy as np

from catalog.measurement_record import MeasurementRecord
from catalog.predictors import CatalogPolicy, build_catalog
from catalog.predictors.data import apply_policy, peak_memory

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def records(extra=()):
    base = [
        MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=10.0, source="profiling"),
        MeasurementRecord(workload="B (batch size 8)", gpu_type="v100", throughput=20.0, source="profiling"),
        MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=4.0, partner="B (batch size 8)",
                          partner_throughput=12.0, source="profiling"),
    ]
    return base + list(extra)


def test_rho_is_fraction_of_isolated_and_clipped():
    catalog = build_catalog(records([MeasurementRecord(workload="B (batch size 8)", gpu_type="v100", throughput=30.0,
                                                       partner="A (batch size 8)", source="profiling")]))
    a, b = catalog.index("A (batch size 8)"), catalog.index("B (batch size 8)")
    assert catalog.rho[a, b, 0] == 0.4
    assert catalog.rho[b, a, 0] == 1.0  # 30 / 20 clipped
    assert np.isnan(catalog.rho[a, a, 0])


def test_sliding_window_keeps_newest_records():
    telemetry = [MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=v,
                                   partner="B (batch size 8)", source="telemetry",
                                   observed_at=T0 + timedelta(minutes=i))
                 for i, v in enumerate([1.0, 1.0, 1.0, 9.0, 9.0, 9.0])]
    only_telemetry = [r for r in records() if r.partner is None] + telemetry
    catalog = build_catalog(only_telemetry, CatalogPolicy(window=3, min_samples=3))
    assert catalog.rho[0, 1, 0] == 0.9


def test_below_min_samples_is_unknown():
    telemetry = [MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=5.0,
                                   partner="B (batch size 8)", source="telemetry", observed_at=T0)] * 2
    catalog = build_catalog([r for r in records() if r.partner is None] + telemetry, CatalogPolicy(min_samples=3))
    assert np.isnan(catalog.rho[0, 1, 0])
    assert catalog.samples[0, 1, 0] == 2


def test_telemetry_outliers_are_rejected():
    values = [5.0, 5.1, 4.9, 5.0, 5.05, 50.0]
    telemetry = [MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=v,
                                   partner="B (batch size 8)", source="telemetry",
                                   observed_at=T0 + timedelta(seconds=i))
                 for i, v in enumerate(values)]
    catalog = build_catalog([r for r in records() if r.partner is None] + telemetry)
    assert catalog.samples[0, 1, 0] == 5
    assert abs(catalog.rho[0, 1, 0] - 0.5) < 0.01


def test_peak_memory_is_over_the_kept_records_running_alone():
    """The window, the outlier rejection and "alone" apply; one reading is enough."""
    def alone(i, throughput, memory, gpu="v100"):
        return MeasurementRecord(workload="A (batch size 8)", gpu_type=gpu, throughput=throughput, source="telemetry",
                                 observed_at=T0 + timedelta(seconds=i), memory_gb=memory)

    kept = [alone(i, 5.0 + 0.01 * i, 6.0) for i in range(5)]
    shared = MeasurementRecord(workload="A (batch size 8)", gpu_type="v100", throughput=2.0, partner="B (batch size 8)",
                               source="telemetry", memory_gb=15.0)
    once = MeasurementRecord(workload="B (batch size 8)", gpu_type="k80", throughput=3.0, source="telemetry",
                             observed_at=T0, memory_gb=9.0)
    policy = CatalogPolicy(window=6)
    assert peak_memory(apply_policy([alone(-1, 5.0, 11.0), *kept, shared, once], policy)) == {
        "A (batch size 8)": 11.0, "B (batch size 8)": 9.0}
    assert peak_memory(apply_policy([alone(-2, 5.0, 11.0), alone(-1, 5.0, 6.0), *kept], policy)) == {
        "A (batch size 8)": 6.0}  # the 11 GB reading left the window of 6
    assert peak_memory(apply_policy([*kept, alone(9, 50.0, 14.0)], policy)) == {
        "A (batch size 8)": 6.0}  # a throughput outlier's reading goes with it


def test_without_hides_every_record_of_a_workload(catalog):
    name = catalog.workloads[0]
    smaller = catalog.without([name])
    assert name not in smaller.workloads
    assert smaller.rho.shape == (len(catalog.workloads) - 1,) * 2 + (len(catalog.gpu_types),)
