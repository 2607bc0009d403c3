"""Multi-GPU estimates from a 1-GPU estimate and communication times (catalog.predictors.scaling)."""
import math

import numpy as np
import pytest

from catalog.predictors import CatalogData
from catalog.predictors.features import WorkloadFeatures
from catalog.predictors.scaling import (
    INTERCONNECT,
    INTERCONNECT_EXPONENT,
    SCALING_LOG_SD,
    fit_scaling,
    format_multi_gpu,
    holdout_errors,
    multi_gpu_holdout,
    multi_gpu_log_sd,
    multi_gpu_tau,
)


def features(name, family, parameters=None):
    return WorkloadFeatures(name, family, 32, parameters, None, None, None, None)


def two_type_catalog():
    """One family on p100 (16 GB/s) at 1 and 2 GPUs: 10 steps/s alone, 2 GPUs 16 steps/s, so a
    2-GPU step adds 2 / 16 - 1 / 10 = 0.025 s."""
    configs = [("p100", 1, True), ("p100", 2, True), ("p100", 2, False), ("t4", 1, True)]
    tau = np.array([[10.0, 16.0, 10.0, 5.0]])
    return CatalogData(["R"], [features("R", "ResNet-18", 1_000_000)], ["p100", "t4"], configs, tau,
                       np.full((1, 1, 2), np.nan), np.zeros((1, 1, 2), dtype=int))


def test_communication_time_is_carried_to_another_type_and_scaled_by_its_interconnect():
    fit = fit_scaling(two_type_catalog())
    assert fit.setups == ((2, False), (2, True))
    # consolidated: 0.025 s at 16 GB/s, on an a100 (300 GB/s) 0.025 * (16 / 300) ** 0.3
    comm = 0.025 * (16 / 300) ** INTERCONNECT_EXPONENT
    tau = multi_gpu_tau(20.0, fit, features("R", "ResNet-18"), "a100", 2, True)
    assert tau == pytest.approx(2 / (1 / 20 + comm))
    # spread: the network, not the GPU, carries it: the same 2 / 10 - 1 / 10 = 0.1 s anywhere
    assert multi_gpu_tau(20.0, fit, features("R", "ResNet-18"), "a100", 2, False) == pytest.approx(2 / (0.05 + 0.1))


def test_a_family_without_multi_gpu_rows_is_scaled_by_its_parameters():
    fit = fit_scaling(two_type_catalog())
    bigger = features("G", "GPT", 3_000_000)  # 3x the parameters: 3x the communication
    tau = multi_gpu_tau(20.0, fit, bigger, "p100", 2, True)
    assert tau == pytest.approx(2 / (1 / 20 + 3 * 0.025))
    assert multi_gpu_tau(20.0, fit, features("U", "Unknown"), "p100", 2, True) is None  # nothing to go on


def test_one_gpu_and_does_not_fit_pass_through():
    fit = fit_scaling(two_type_catalog())
    assert multi_gpu_tau(7.0, fit, features("R", "ResNet-18"), "h100", 1, True) == 7.0
    assert multi_gpu_tau(0.0, fit, features("R", "ResNet-18"), "h100", 2, True) == 0.0


def test_uncertainty_grows_with_the_number_of_gpus():
    assert multi_gpu_log_sd(0.5, 1) == 0.5
    assert multi_gpu_log_sd(0.5, 8) == pytest.approx(math.hypot(0.5, 3 * SCALING_LOG_SD))
    assert multi_gpu_log_sd(0.5, 2) < multi_gpu_log_sd(0.5, 4) < multi_gpu_log_sd(0.5, 8)


def test_every_type_has_a_sourced_interconnect():
    assert {"k80", "p100", "v100", "t4", "a100", "h100", "h200"} <= set(INTERCONNECT)
    assert all(i.gbs > 0 and i.source for i in INTERCONNECT.values())


def test_reference_types_held_out_in_turn(full_catalog):
    """The documented figures (docs/predictors.md, "Multi-GPU on unmeasured types")."""
    report = multi_gpu_holdout(full_catalog)  # bench_predictors' p1.multi_gpu_unmeasured.<type>
    assert set(report) == {"k80", "p100", "v100"}
    assert report["k80"]["mape"] == pytest.approx(0.1389, abs=1e-3)
    assert report["p100"]["mape"] == pytest.approx(0.2031, abs=1e-3)
    assert report["v100"]["mape"] == pytest.approx(0.3381, abs=1e-3)
    assert "v100       114    33.8 %        34.9 %    32.7 %" in format_multi_gpu(report)
    for t in ("k80", "p100", "v100"):
        assert holdout_errors(full_catalog, t)["log_sd_per_doubling"] <= SCALING_LOG_SD * 1.2
