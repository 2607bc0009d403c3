"""P2 of a workload the catalog already holds: observations beat the catalog's reference."""
import numpy as np
import pytest

from catalog.predictors import Observation, PerformancePredictor

from .conftest import TINY

KNOWN = "ResNet-18 (batch size 32)"


@pytest.fixture(scope="module", params=["structured", "feedforward"])
def fitted(request, catalog):
    params = {} if request.param == "structured" else TINY
    return PerformancePredictor(architecture=request.param, **params).fit(catalog)


def test_a_catalog_workload_starts_from_the_catalog_and_follows_its_observations(fitted, catalog):
    q = catalog.workloads.index(KNOWN)
    job = fitted.job(catalog.features[q])
    before = job.prediction()
    reference_tau, reference_rho = catalog.tau[q], catalog.rho[q]
    known = ~np.isnan(reference_tau)
    np.testing.assert_allclose(before.tau[known], reference_tau[known])
    assert before.tau_measured[known].all()

    v100, k80 = (catalog.configs.index((gpu, 1, True)) for gpu in ("v100", "k80"))
    slower = 0.6 * reference_tau[v100]  # the running job is 40% slower than the reference
    job.observe(Observation("v100", slower))
    after = job.prediction()
    assert after.isolated("v100") == pytest.approx(slower)  # the observation, not the catalog
    assert after.tau_measured[v100] and after.tau_std[v100] == 0.0
    v100_multi = [i for i, (gpu, n, _) in enumerate(catalog.configs) if gpu == "v100" and n > 1 and known[i]]
    # unobserved catalog cells of the same type move toward the observation, others less or not up
    assert (after.tau[v100_multi] < reference_tau[v100_multi]).all()
    assert after.tau[k80] <= reference_tau[k80] * (1 + 1e-9)
    assert (after.tau_std[v100_multi] > 0).all()  # no longer exactly the reference

    partner = catalog.workloads.index("LM (batch size 20)")
    a = catalog.gpu_types.index("v100")
    lower = max(reference_rho[partner, a] - 0.3, 0.05)
    job.observe(Observation("v100", lower * slower, partner="LM (batch size 20)"))
    shifted = job.prediction()
    assert shifted.rho[partner, a] == pytest.approx(lower)
    others = [p for p in range(len(catalog.workloads)) if p != partner and reference_rho[p, a] > 0]
    assert (shifted.rho[others, a] <= reference_rho[others, a] + 1e-9).all()
    assert (shifted.rho[others, a] < reference_rho[others, a]).any()
    assert ((shifted.rho >= 0) & (shifted.rho <= 1)).all()
