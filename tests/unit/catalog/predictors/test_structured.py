"""The structured predictor: memory model, interpolation, P2 posterior, persistence."""
import dataclasses
import io

import numpy as np
import pytest
import torch

from catalog.predictors import Observation, PerformancePredictor
from catalog.predictors.structured import StructuredModel, _interpolate


@pytest.fixture(scope="module")
def structured(held_out):
    return PerformancePredictor(architecture="structured").fit(held_out[0])


def test_interpolation_is_linear_in_log_batch_and_clips_extrapolated_slopes():
    log_batches = np.log([16.0, 64.0])
    values = np.array([[0.4, 2.0], [0.8, 1.0]])  # two cells
    inside, spread = _interpolate(log_batches, values, np.log(32.0))
    np.testing.assert_allclose(inside, [0.6, 1.5])
    np.testing.assert_allclose(spread, [0.2, 0.5])
    # beyond the range: the nearest value, or a line whose slope is clipped to the bounds
    np.testing.assert_allclose(_interpolate(log_batches, values, np.log(256.0))[0], [0.8, 1.0])
    rising = _interpolate(log_batches, values, np.log(256.0), slope=(-1.0, 0.0))[0]
    assert rising[0] == pytest.approx(0.8)  # a rising slope is clipped to 0
    assert rising[1] == pytest.approx(0.0)  # slope -1 / log 4 kept: 1.0 over one more log 4
    unknown = _interpolate(log_batches, np.array([[np.nan], [np.nan]]), np.log(32.0))[0]
    assert np.isnan(unknown).all()


def test_pairs_predicted_not_to_fit_are_zero(full_catalog):
    """ResNet-50 (batch size 128) fits next to no partner on a K80: the memory model, fitted
    without it, says so from its FLOPs per step alone."""
    name = "ResNet-50 (batch size 128)"
    model = StructuredModel().fit(full_catalog.without([name]))
    rho, std = model.rho(full_catalog.features[full_catalog.workloads.index(name)])
    k80 = full_catalog.gpu_types.index("k80")
    assert (rho[:, k80] == 0).mean() > 0.8
    assert (std >= 0).all() and ((rho >= 0) & (rho <= 1)).all()


def test_posterior_moves_cells_that_share_a_gpu_type_or_partner(structured, held_out):
    model = structured.structured_
    prior, std = model.rho(held_out[1])
    p, a = int(np.argmax(prior[:, 0])), 0
    posterior, post_std = model.rho_posterior(prior, std, [(p, a, prior[p, a] - 0.3)])
    moved = posterior - prior
    assert moved[p, a] < -0.1
    fits = prior > 0
    others_same_type = [i for i in range(len(prior)) if i != p and fits[i, a]]
    assert (moved[others_same_type, a] < 0).all()  # same GPU type moves down too
    assert np.abs(moved[others_same_type, a]).mean() > np.abs(moved[others_same_type, 1]).mean()
    assert (post_std <= std + 1e-12).all()


def test_tau_observations_shift_the_observed_gpu_type_most(structured, held_out):
    model = structured.structured_
    log_tau, _ = model.log_tau(held_out[1])
    c = structured.catalog_.configs.index(("v100", 1, True))
    shifted = model.tau_shift(log_tau, [(c, float(np.exp(log_tau[c] + 0.5)))])
    assert shifted[c] == pytest.approx(log_tau[c] + 0.5, abs=0.01)
    gpu = model.gpu_of_config_
    same, other = gpu == gpu[c], gpu != gpu[c]
    assert (shifted - log_tau)[same].mean() > (shifted - log_tau)[other].mean() >= 0


def test_structured_job_follows_observations_and_round_trips(structured, held_out):
    features = held_out[1]
    job = structured.job(features)
    before = job.prediction()
    assert before.low_confidence and ((before.rho >= 0) & (before.rho <= 1)).all()
    job.observe(Observation("v100", 5.0))
    partner = structured.catalog_.workloads[0]
    job.observe(Observation("v100", 0.5, partner=partner))
    after = job.prediction()
    assert after.isolated("v100") == 5.0 and not after.low_confidence
    assert after.rho[0, structured.catalog_.gpu_types.index("v100")] == pytest.approx(0.1)
    buffer = io.BytesIO()
    torch.save(structured.state_dict(), buffer)
    loaded = PerformancePredictor.from_state_dict(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    np.testing.assert_array_equal(loaded.predict(features).rho, before.rho)
    np.testing.assert_array_equal(loaded.predict(features).tau, before.tau)


def test_a_catalog_too_small_for_some_relations_gives_finite_kernels(catalog):
    """Three workloads of three families, measured on 1 GPU only: no two partners share a
    family and no GPU type has two setups, so those residual relations are never seen; their
    variances are 0, not NaN (a NaN would poison every P2 update)."""
    keep = ("A3C", "CycleGAN", "Recommendation (batch size 1024)")
    small = catalog.without([w for w in catalog.workloads if w not in keep])
    model = StructuredModel().fit(small)
    for kernel in (model.kernel_, model.tau_kernel_):
        assert all(np.isfinite(v) and v >= 0 for v in kernel.values())
    prior, std = model.rho(small.features[0])
    posterior, _ = model.rho_posterior(prior, std, [(1, 0, 0.5)])
    assert np.isfinite(posterior).all()


def test_multi_gpu_configurations_are_a_one_gpu_step_plus_communication(structured, held_out):
    """An observed 1-GPU throughput rebuilds its type's multi-GPU configurations as
    n / (1 / tau_1 + c): the family's communication time is kept, not its speed-up."""
    model, features = structured.structured_, held_out[1]
    catalog = structured.catalog_
    q = catalog.workloads.index("ResNet-50 (batch size 32)")
    two = catalog.configs.index(("v100", 2, True))
    one = catalog.configs.index(("v100", 1, True))
    assert model.comm_[q, two] == pytest.approx(2 / catalog.tau[q, two] - 1 / catalog.tau[q, one])
    assert np.isnan(model.comm_[q, one])  # one GPU communicates with nobody

    log_tau, _ = model.log_tau(features)
    comm = model.communication(features)
    observed = 3.0 * float(np.exp(log_tau[one]))  # much faster than the neighbours on one GPU
    shifted = model.tau_shift(log_tau, [(one, observed)], comm)
    v100_multi = [
        c for c, (gpu, n, _) in enumerate(catalog.configs) if gpu == "v100" and n > 1 and np.isfinite(comm[c])
    ]
    assert v100_multi
    alone = float(np.exp(shifted[one]))  # the observation itself, not the shrunk posterior mean
    assert alone == pytest.approx(observed, rel=1e-9)
    spread_one = catalog.configs.index(("v100", 1, False))  # the same one GPU, its twin
    assert np.exp(shifted[spread_one]) == pytest.approx(observed, rel=1e-9)
    for c in v100_multi:
        n = catalog.configs[c][1]
        assert np.exp(shifted[c]) == pytest.approx(n / (1 / alone + comm[c]))
    # without communication times the Gaussian process alone moves them
    assert not np.allclose(model.tau_shift(log_tau, [(one, observed)])[v100_multi], shifted[v100_multi])


def test_one_shot_is_p2_after_the_profiled_observation(structured, held_out):
    """P1 one-shot (a profile given to predict) and P2 (the same throughput observed by a
    running job) go through one code path and give the same throughputs."""
    features = held_out[1]
    one_shot = structured.predict(features, {("p100", 1, True): 7.5})
    job = structured.job(features)
    job.observe(Observation("p100", 7.5))
    np.testing.assert_array_equal(one_shot.tau, job.prediction().tau)
    assert one_shot.isolated("p100") == 7.5
    assert one_shot.isolated("p100", consolidated=False) == pytest.approx(7.5, rel=1e-12)  # its twin


def test_an_unseen_family_gets_the_mean_over_families_each_counted_once(structured):
    model, catalog = structured.structured_, structured.catalog_
    stranger = dataclasses.replace(catalog.features[0], name="new", family="Unseen")
    value, _ = model.rho_values(stranger)
    rho = np.where(catalog.rho > 0, catalog.rho, np.nan)
    families = sorted(set(catalog.families))
    means = [np.nanmean(rho[[i for i, f in enumerate(catalog.families) if f == fam]], axis=0) for fam in families]
    expected = np.nanmean(means, axis=0)
    known = ~np.isnan(expected)
    np.testing.assert_allclose(value[known], expected[known])
    counts = {fam: catalog.families.count(fam) for fam in families}
    assert max(counts.values()) > 1  # a workload-weighted mean would differ


def test_p2_kernel_is_measured_on_cells_that_fit_and_are_predicted_to(structured):
    residuals, fitting = structured.structured_._leave_one_out_residuals()
    catalog_rho = structured.catalog_.rho
    assert not fitting[np.nan_to_num(catalog_rho) == 0].any()  # memory misses are not P2's noise
    assert fitting.any() and np.isfinite(residuals[fitting]).all()
