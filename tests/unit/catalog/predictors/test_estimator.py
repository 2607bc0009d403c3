import io

import numpy as np
import pytest
import torch

from catalog.predictors import ARCHITECTURES, Observation, PerformancePredictor, UnknownGpuType, UnknownWorkload

from .conftest import TINY


def test_fit_returns_self_and_learned_state_ends_in_underscore(held_out):
    model = PerformancePredictor(architecture="feedforward", **TINY)
    assert model.fit(held_out[0]) is model
    assert hasattr(model, "rho_net_") and hasattr(model, "tau_net_") and hasattr(model, "train_mae_")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_training_is_deterministic_with_a_seed(held_out, architecture):
    train, features = held_out
    first = PerformancePredictor(architecture=architecture, **TINY).fit(train).predict(features)
    second = PerformancePredictor(architecture=architecture, **TINY).fit(train).predict(features)
    np.testing.assert_array_equal(first.rho, second.rho)
    np.testing.assert_array_equal(first.tau, second.tau)


def test_save_load_round_trip_gives_identical_predictions(model, held_out):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    loaded = PerformancePredictor.from_state_dict(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    features = held_out[1]
    before, after = model.predict(features), loaded.predict(features)
    np.testing.assert_array_equal(before.rho, after.rho)
    np.testing.assert_array_equal(before.tau, after.tau)
    assert PerformancePredictor.from_bytes(model.to_bytes()).get_params() == model.get_params()


def test_predictions_are_fractions_with_uncertainty(model, held_out):
    prediction = model.predict(held_out[1])
    assert prediction.rho.shape == (len(model.catalog_.workloads), len(model.catalog_.gpu_types))
    assert ((prediction.rho >= 0) & (prediction.rho <= 1)).all()
    assert (prediction.rho_std >= 0).all() and (prediction.tau > 0).all() and (prediction.tau_std >= 0).all()
    assert prediction.low_confidence


def test_unknown_gpu_type_is_a_clear_error(model, held_out):
    job = model.job(held_out[1])
    with pytest.raises(UnknownGpuType, match="h100.*known types: k80, p100, v100"):
        job.observe(Observation("h100", 3.0))


def test_unknown_partner_workload_is_a_clear_error(model, held_out):
    job = model.job(held_out[1])
    with pytest.raises(UnknownWorkload, match="unknown workload 'GPT-5'"):
        job.observe(Observation("v100", 1.0, partner="GPT-5"))


def test_unknown_architecture_is_refused(held_out):
    with pytest.raises(ValueError, match="choose one of feedforward, rnn, transformer"):
        PerformancePredictor(architecture="mamba").fit(held_out[0])


def test_p2_moves_toward_observations_and_stays_in_unit_interval(model, held_out):
    job = model.job(held_out[1])
    partner = model.catalog_.workloads.index("LM (batch size 20)")
    v100 = model.catalog_.gpu_types.index("v100")
    before = job.prediction()
    job.observe(Observation("v100", 4.0))
    target_rho = 0.05 if before.rho[partner, v100] > 0.5 else 0.95
    for other in ("LM (batch size 10)", "LM (batch size 20)", "Recommendation (batch size 1024)"):
        job.observe(Observation("v100", target_rho * 4.0, partner=other, partner_throughput=1.0))
    after = job.prediction()
    assert after.rho[partner, v100] == pytest.approx(target_rho)
    unobserved = ~after.rho_measured
    moved = np.abs(after.rho - target_rho)[unobserved].mean() < np.abs(before.rho - target_rho)[unobserved].mean()
    assert moved
    assert ((after.rho >= 0) & (after.rho <= 1)).all()
    assert after.isolated("v100") == 4.0 and not after.low_confidence
    job.observe(Observation("v100", 1e6, partner="A3C"))  # absurd telemetry still stays in [0, 1]
    assert ((job.prediction().rho >= 0) & (job.prediction().rho <= 1)).all()


def test_one_shot_profile_is_used(model, held_out):
    truth = 7.787  # reference v100 throughput of ResNet-50 (batch size 32), a same-family neighbour's scale
    prediction = model.predict(held_out[1], profile={("v100", 1, True): truth})
    assert prediction.isolated("v100") == truth and prediction.tau_measured.sum() == 1
