"""from_state_dict checks every part of a stored state before building a model from it: a state
may come from another cluster's export, and a wrong shape used to fail only inside every later
prediction (a broadcast error), a NaN to turn every estimate into NaN."""
import copy
import math

import numpy as np
import pytest
import torch

from catalog.predictors import PerformancePredictor, build_catalog, records_from_gavel
from catalog.predictors.baselines import LowRank
from catalog.predictors.bench import score_p1

from .conftest import TINY


@pytest.fixture(scope="module")
def structured(held_out):
    return PerformancePredictor(architecture="structured").fit(held_out[0])


def broken(state, change):
    state = copy.deepcopy(state)
    change(state)
    return state


def test_a_valid_state_round_trips(structured, held_out):
    restored = PerformancePredictor.from_state_dict(structured.state_dict())
    np.testing.assert_array_equal(restored.predict(held_out[1]).rho, structured.predict(held_out[1]).rho)


@pytest.mark.parametrize("change, message", [
    (lambda s: s["catalog"].update(rho=s["catalog"]["rho"][:, :-1]), "catalog.rho must be a tensor of shape"),
    (lambda s: s["catalog"].update(tau=torch.full_like(s["catalog"]["tau"], math.nan)), "catalog.tau"),
    (lambda s: s["catalog"]["tau"].__setitem__((0, 0), math.inf), "catalog.tau"),
    (lambda s: s["catalog"]["rho"].__setitem__((0, 1, 0), 1.5), "catalog.rho must hold fractions"),
    (lambda s: s["catalog"].update(samples=s["catalog"]["samples"][:2]), "catalog.samples"),
    (lambda s: s["catalog"]["features"].pop(), "catalog.features"),
    (lambda s: s["catalog"]["configs"].append(["h100", 1, True]), "catalog.configs"),
    (lambda s: s["structured"]["alpha"].__setitem__(0, math.nan), "structured.alpha"),
    (lambda s: s["structured"].update(beta=s["structured"]["beta"][:1]), "structured.beta"),
    (lambda s: s["structured"]["kernel"].update(noise=0.0), "structured.kernel"),
    (lambda s: s["structured"]["tau_kernel"].pop("config"), "structured.tau_kernel"),
    (lambda s: s.pop("structured"), "no structured parameters"),
    (lambda s: s["params"].update(hidden=-1), "hidden must be a whole number >= 1"),
    (lambda s: s["params"].update(epochs=0), "epochs must be a whole number >= 1"),
    (lambda s: s["params"].update(architecture="nope"), "unknown architecture 'nope'"),
    (lambda s: s["params"].update(learning_rate=math.nan), "learning_rate must be a finite number"),
    (lambda s: s["params"].update(extra=1), "unknown hyperparameters extra"),
    (lambda s: s.pop("catalog"), "no catalog snapshot"),
])
def test_a_malformed_structured_state_is_a_value_error_naming_the_part(structured, change, message):
    with pytest.raises(ValueError, match=message):
        PerformancePredictor.from_state_dict(broken(structured.state_dict(), change))


def test_a_malformed_network_state_is_a_value_error(model):
    state = model.state_dict()
    with pytest.raises(ValueError, match="rho_net.embed.0.weight must be a tensor of finite numbers"):
        PerformancePredictor.from_state_dict(broken(state, lambda s: s["rho_net"]["embed.0.weight"].fill_(math.nan)))
    with pytest.raises(ValueError, match="does not fit a feedforward network of 9 hidden units"):
        PerformancePredictor.from_state_dict(broken(state, lambda s: s["params"].update(hidden=9)))
    with pytest.raises(ValueError, match="no tau_net weights"):
        PerformancePredictor.from_state_dict(broken(state, lambda s: s.pop("tau_net")))


def test_fit_refuses_hyperparameters_out_of_range(held_out):
    with pytest.raises(ValueError, match="epochs must be a whole number >= 1, not -5"):
        PerformancePredictor(architecture="feedforward", **{**TINY, "epochs": -5}).fit(held_out[0])


def test_without_hides_workloads_and_keeps_the_learned_numbers(structured, catalog, held_out):
    """An imported model is scored on the local validation workloads hidden from its snapshot:
    those workloads are then predicted, not copied from its records."""
    name = "LM (batch size 20)"
    hidden = structured.without([name])
    assert name not in hidden.catalog_.workloads and name in structured.catalog_.workloads
    assert hidden.structured_.kernel_ == structured.structured_.kernel_
    assert score_p1(hidden, held_out[0], [name])["val_mae"] > score_p1(structured, held_out[0], [name])["val_mae"] == 0


def test_scores_match_cells_by_name_across_catalogs(catalog):
    """A model from a cluster with fewer GPU types and other workloads is scored on the cells
    both catalogs know (it used to fail on mismatched shapes)."""
    name = "ResNet-50 (batch size 64)"
    kept = {w for w in catalog.workloads if w != name} | {"ResNet-50 (batch size 128)"}
    other = build_catalog([r for r in records_from_gavel()
                           if r.gpu_type != "k80" and r.workload in kept and r.partner in kept | {None}])
    assert len(other.gpu_types) == len(catalog.gpu_types) - 1 and set(other.workloads) - set(catalog.workloads)
    fitted = PerformancePredictor(architecture="structured").fit(other)
    scores = score_p1(fitted, catalog, [name])
    assert 0 < scores["val_mae"] < 1 and scores["iso_mape"]["one_shot"] >= 0


def test_scores_without_co_location_data_are_none_not_nan(held_out, catalog):
    alone = copy.copy(catalog)
    alone.rho = np.full_like(catalog.rho, np.nan)
    fitted = PerformancePredictor(architecture="structured").fit(alone.without(["A3C"]))
    scores = score_p1(fitted, alone, ["A3C"])
    assert scores["val_mae"] is None and scores["train_mae"] is None
    assert scores["iso_mape"]["zero_shot"] > 0
    assert (fitted.predict(held_out[1]).rho == 0).all()  # documented: nothing is co-located on a guess
    net = PerformancePredictor(architecture="feedforward", **TINY).fit(alone)
    assert (net.predict(held_out[1]).rho == 0).all() and math.isnan(net.train_mae_)


def test_low_rank_fits_a_catalog_without_co_location_data(catalog):
    alone = copy.copy(catalog)
    alone.rho = np.full_like(catalog.rho, np.nan)
    baseline = LowRank().fit(alone)  # used to raise LinAlgError: SVD did not converge
    assert baseline.basis_.shape[0] == 3 and np.isfinite(baseline.basis_).all()
