import numpy as np

from catalog.predictors.baselines import BASELINES, LowRank
from catalog.predictors.power import predict_power, read_zeus


def test_every_baseline_predicts_fractions(held_out):
    train, features = held_out
    for name, cls in BASELINES.items():
        rho = cls().fit(train).predict_rho(features)
        assert rho.shape == train.rho.shape[1:], name
        assert np.nanmin(rho) >= 0 and np.nanmax(rho) <= 1, name


def test_low_rank_completion_fits_observed_cells(held_out, catalog):
    train, features = held_out
    q = catalog.workloads.index(features.name)
    truth = catalog.rho[q, [catalog.workloads.index(w) for w in train.workloads]]
    model = LowRank().fit(train)
    observed = [(p, 2, truth[p, 2], np.nan) for p in range(4)]
    before = np.abs(model.predict_rho(features)[:4, 2] - truth[:4, 2]).mean()
    after = np.abs(model.predict_rho(features, observed)[:4, 2] - truth[:4, 2]).mean()
    assert after < before


def test_power_from_zeus_for_resnet50_and_from_the_curve_otherwise(held_out, catalog):
    zeus = read_zeus()
    resnet = held_out[1]
    lm = catalog.features[catalog.workloads.index("LM (batch size 20)")]
    curve = [[0, 35], [1, 300]]
    measured = predict_power(resnet, "v100", curve, zeus)
    assert measured.source == "zeus" and 200 < measured.watts < 250
    modelled = predict_power(lm, "v100", curve, zeus)
    assert modelled.source == "power curve" and 35 < modelled.watts <= 300 and modelled.std > 0
    shared = predict_power(lm, "v100", curve, zeus, partner_share=0.3, rho=0.6)
    assert shared.watts != modelled.watts
