"""Transfer to a partly measured GPU type: the ratio math by hand, and a few rows that must not
become every other workload's estimate there (issue 18: one ResNet-18 row on a new type dragged
the other batch sizes and every unmeasured family to its value)."""
import math

import numpy as np
import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.measurement_record import MeasurementRecord
from catalog.predictors import PerformancePredictor, build_catalog, records_from_gavel
from catalog.predictors.features import WorkloadFeatures
from catalog.predictors.gpu_specs import GPU_DATASHEETS, GpuDatasheet, carry_over, closeness_weights
from catalog.predictors.transfer import DATASHEET_WEIGHT, TRANSFER_LOG_SD, interpolate_ratio, suite_transfer
from telemetry.product_names import gpu_type_for_product

from .conftest import SLICE


def family(name, batch, density=0.8):
    return WorkloadFeatures(name=name, family=name.split()[0], batch_size=batch, compute_density=density)


def test_ratio_is_interpolated_in_log_batch_and_held_flat_beyond_the_cases():
    assert interpolate_ratio([math.log(16), math.log(64)], [math.log(2), math.log(4)], math.log(32)) == (
        pytest.approx(math.log(math.sqrt(8))))
    assert interpolate_ratio([math.log(16), math.log(64)], [1.0, 2.0], math.log(256)) == 2.0
    assert interpolate_ratio([math.log(16), math.log(64)], [1.0, 2.0], math.log(4)) == 1.0
    assert interpolate_ratio([0.0, 0.0, 1.0], [1.0, 3.0, 4.0], 0.0) == 2.0  # one batch size twice: the mean


def test_same_family_estimate_is_the_own_source_throughput_times_the_family_ratio():
    # Two cases of family F on the target: 2x and 4x their source throughput, at batch 16 and 64.
    features = [family("F 16", 16), family("F 64", 64)]
    target = np.log([20.0, 40.0])
    sources = np.log([[10.0], [10.0]])
    transfer = suite_transfer("new", ["old"], target, sources, features, specs={})
    value, spread = transfer.log_tau(np.array([math.log(7.0)]), "F", math.log(32), 0.8)
    assert math.exp(value) == pytest.approx(7.0 * math.sqrt(8))  # ratio sqrt(2 x 4) at batch 32
    assert spread == pytest.approx(TRANSFER_LOG_SD)  # one source: no disagreement


def test_unmeasured_family_is_the_datasheet_ratio_corrected_by_the_cases_residual():
    old, new = GpuDatasheet(10.0, 100.0, 16, "", 2016), GpuDatasheet(20.0, 400.0, 16, "", 2020)
    specs = {"old": old, "new": new}
    features = [family("F 16", 16, 0.8), family("F 64", 64, 0.8)]
    spec_08 = carry_over(0.0, 0.8, old, new)
    residual = math.log(1.5)  # both cases run 1.5x faster than the datasheets say
    target = np.log([10.0, 5.0]) + spec_08 + residual
    sources = np.log([[10.0], [5.0]])
    transfer = suite_transfer("new", ["old"], target, sources, features, specs=specs)
    value, _ = transfer.log_tau(np.array([0.0]), "G", 0.0, 0.8)
    # each case weighs 1/2 (one family counts once), the datasheet DATASHEET_WEIGHT
    assert value == pytest.approx(spec_08 + residual / (1 + DATASHEET_WEIGHT))
    far, _ = transfer.log_tau(np.array([0.0]), "G", 0.0, 0.0)  # density 0: the cases barely count
    assert far == pytest.approx(carry_over(0.0, 0.0, old, new), abs=1e-3)
    nothing = suite_transfer("new", ["old"], np.full(2, np.nan), sources, features, specs=specs)
    assert nothing.log_tau(np.array([0.0]), "G", 0.0, 0.8)[0] == pytest.approx(spec_08)  # no case: datasheets
    assert math.isnan(suite_transfer("new", ["old"], np.full(2, np.nan), sources, features, specs={}).log_tau(
        np.array([0.0]), "G", 0.0, 0.8)[0])
    plain, _ = suite_transfer("new", ["old"], target, sources, features, specs={}).log_tau(
        np.array([0.0]), "G", 0.0, 0.8)
    assert plain == pytest.approx(spec_08 + residual)  # no datasheets: the measured ratio itself


def test_a_source_type_with_erratic_ratios_counts_less():
    features = [family("F 16", 16), family("F 32", 32), family("F 64", 64)]
    target = np.log([20.0, 20.0, 20.0])
    steady = np.log([10.0, 10.0, 10.0])  # ratio 2 at every batch size
    erratic = np.log([5.0, 20.0, 5.0])  # ratio 4, 1, 4
    transfer = suite_transfer("new", ["steady", "erratic"], target, np.column_stack([steady, erratic]), features,
                              specs={})
    assert transfer.weights[0] > 10 * transfer.weights[1]


def test_closeness_prefers_the_nearer_architecture_generation():
    weights = closeness_weights("t4", ["k80", "p100", "v100"])
    assert weights.argmin() == 0  # K80 is nearest to T4 in datasheet numbers, four years older
    undated = {a: GpuDatasheet(s.fp32_tflops, s.memory_bandwidth_gbs, s.memory_gb, "")
               for a, s in GPU_DATASHEETS.items()}
    assert closeness_weights("t4", ["k80", "p100", "v100"], undated).argmax() == 0
    a100 = closeness_weights("a100", ["k80", "p100", "v100"])
    assert a100.argmax() == 2 and a100[2] > 0.8 * a100.sum()
    assert (closeness_weights("x", ["k80", "p100"], target_spec=GpuDatasheet(5.0, 300.0, 16, "")) > 0).all()


def test_new_gpu_types_have_datasheets_agreeing_with_their_defaults():
    for default in GPU_TYPE_DEFAULTS:
        sheet = GPU_DATASHEETS[default.name]
        assert sheet.memory_gb == default.memory_gb and sheet.announced and sheet.source, default.name
    assert {"l4", "a10", "l40s"} <= {d.name for d in GPU_TYPE_DEFAULTS}


@pytest.mark.parametrize("product, expected", [
    ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"), ("NVIDIA L40", "l40s"), ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10"), ("NVIDIA A100-SXM4-40GB", "a100"), ("NVIDIA A100 80GB PCIe", "a100"),
    ("Tesla T4", "t4"), ("NVIDIA H100 80GB HBM3", "h100"),
])
def test_product_names_of_the_new_types_do_not_capture_their_neighbours(product, expected):
    patterns = [(d.name, d.product_names) for d in GPU_TYPE_DEFAULTS]
    assert gpu_type_for_product(product, patterns) == expected


# ---- the regression of issue 18: one imported row on a new type ---------------------------------

ROW = "ResNet-18 (batch size 32)"
ROW_STEPS = 90.0


@pytest.fixture(scope="module")
def one_row_model():
    records = [r for r in records_from_gavel() if r.workload in SLICE and (r.partner is None or r.partner in SLICE)]
    records.append(MeasurementRecord(ROW, "a100", ROW_STEPS, source="profiling"))
    catalog = build_catalog(records)
    return PerformancePredictor(architecture="structured").fit(catalog), catalog


def a100(model, workload):
    return model.predict(model.features_of(workload)).isolated("a100")


def test_one_row_moves_its_family_by_a_ratio_not_to_its_value(one_row_model):
    model, catalog = one_row_model
    other = "ResNet-18 (batch size 64)"
    predicted = a100(model, other)
    assert predicted != pytest.approx(ROW_STEPS, rel=0.05)
    # Per source type a: its throughput on a x the row's a100 / a ratio; a weighted mean of those.
    candidates = []
    for a in ("k80", "p100", "v100"):
        c = catalog.configs.index((a, 1, True))
        own, row = catalog.tau[catalog.index(other), c], catalog.tau[catalog.index(ROW), c]
        candidates.append(own * ROW_STEPS / row)
    assert min(candidates) * 0.999 <= predicted <= max(candidates) * 1.001
    assert a100(model, ROW) == pytest.approx(ROW_STEPS)  # the measured row itself is read


@pytest.mark.parametrize("workload", ["LM (batch size 10)", "Transformer (batch size 32)", "A3C", "CycleGAN"])
def test_other_families_are_not_predicted_at_the_rows_value(one_row_model, workload):
    model, catalog = one_row_model
    predicted = a100(model, workload)
    v100 = catalog.tau[catalog.index(workload), catalog.configs.index(("v100", 1, True))]
    assert abs(math.log(predicted / ROW_STEPS)) > 0.2, workload
    # A100 against V100: within the datasheet's range (1.2x FP32 .. 1.7x bandwidth) scaled by
    # what the row measured against the datasheets, not a copy of another family's throughput.
    assert 0.5 * v100 < predicted < 4 * v100, workload


def test_a_new_job_of_an_unseen_family_is_not_predicted_at_the_rows_value(one_row_model):
    model, _ = one_row_model
    job = WorkloadFeatures(name="new", family="Unknown", batch_size=32, parameters=5e6, flops_per_sample=1e9,
                           compute_density=0.5, memory_intensity=0.5)
    assert abs(math.log(model.predict(job).isolated("a100") / ROW_STEPS)) > 0.2
