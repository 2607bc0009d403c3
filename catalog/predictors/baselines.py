"""Non-neural baselines, scored in the same benchmark as the networks.

- global_mean: the mean rho of the catalog (the issue's 0.175 anchor);
- partner_mean: mean of the catalog's workloads per partner and GPU type (0.128);
- family_nearest: mean of the two same-family workloads nearest in batch size (0.092);
- nearest_neighbour: copy the nearest catalog workload in feature space; with observations,
  the one agreeing best with them (Gavel-style fingerprinting);
- low_rank: low-rank matrix completion: partner_mean plus a rank-r combination of the
  catalog's residual rows, fitted by ridge regression to the observed cells (Gavel's
  throughput estimator).

Isolated throughput: same-family batch-scaled guess (zero-shot) and same-family speed ratio
to the observed configurations (one-shot and after).
Each baseline is `fit(catalog) -> self` and `predict_rho(features, observations)`,
`predict_tau(features, tau_observations)` with the networks' observation format.
"""
import warnings

import numpy as np

from .data import CatalogData
from .features import feature_vector


class CatalogBaseline:
    """Plumbing shared by the baselines: the catalog, standardised features, families."""

    def __init__(self, rank: int = 3, ridge: float = 0.05):
        self.rank = rank
        self.ridge = ridge

    def fit(self, catalog: CatalogData) -> "CatalogBaseline":
        self.catalog_ = catalog
        raw = np.array([[np.nan if v is None else v for v in feature_vector(f)] for f in catalog.features])
        self.mean_ = np.nanmean(np.where(np.isnan(raw).all(axis=0), 0.0, raw), axis=0)
        filled = np.where(np.isnan(raw), self.mean_, raw)
        std = filled.std(axis=0)
        self.std_ = np.where(std > 0, std, 1.0)
        self.x_ = (filled - self.mean_) / self.std_
        self.partner_mean_ = _nanmean(catalog.rho, axis=0)  # (P, G)
        with np.errstate(divide="ignore"):
            self.log_tau_ = np.where(catalog.tau > 0, np.log(np.where(catalog.tau > 0, catalog.tau, 1.0)), np.nan)
        return self

    def _scaled(self, features) -> np.ndarray:
        raw = np.array([np.nan if v is None else v for v in feature_vector(features)])
        return (np.where(np.isnan(raw), self.mean_, raw) - self.mean_) / self.std_

    def _same_family_nearest(self, features, count: int) -> list[int]:
        fams = self.catalog_.families
        same = [i for i, f in enumerate(fams) if f == features.family]
        batch = np.log(features.batch_size or 1)
        return sorted(same, key=lambda i: abs(np.log(self.catalog_.features[i].batch_size or 1) - batch))[:count]

    def predict_tau(self, features, observations=()) -> np.ndarray:
        """Same-family batch scaling; speed ratio to the observed configurations when there are any."""
        same = self._same_family_nearest(features, 2)
        rows = same or list(range(len(self.catalog_.workloads)))
        batch = np.log(features.batch_size or 1)
        shift = np.array([np.log(self.catalog_.features[i].batch_size or 1) - batch if same else 0.0 for i in rows])
        guesses = self.log_tau_[rows] + shift[:, None]
        if observations:
            offsets = np.array([[np.log(steps) - guesses[r, c] for c, steps in observations] for r in range(len(rows))])
            guesses = guesses + _nanmean(offsets, axis=1)[:, None]
        return np.exp(_nanmean(guesses, axis=0))

    def predict_rho(self, features, observations=()) -> np.ndarray:
        raise NotImplementedError


class GlobalMean(CatalogBaseline):
    def predict_rho(self, features, observations=()):
        return np.full(self.partner_mean_.shape, _nanmean(self.catalog_.rho, axis=None))


class PartnerMean(CatalogBaseline):
    def predict_rho(self, features, observations=()):
        return self.partner_mean_.copy()


class FamilyNearest(CatalogBaseline):
    def predict_rho(self, features, observations=()):
        same = self._same_family_nearest(features, 2)
        if not same:
            return self.partner_mean_.copy()
        return _fill(_nanmean(self.catalog_.rho[same], axis=0), self.partner_mean_)


class NearestNeighbour(CatalogBaseline):
    def predict_rho(self, features, observations=()):
        rho = self.catalog_.rho
        distance = np.linalg.norm(self.x_ - self._scaled(features), axis=1)
        if observations:
            errors = np.array([[abs(r - rho[n, p, a]) for p, a, r, _ in observations] for n in range(len(rho))])
            distance = _nanmean(errors, axis=1) * 1e3 + distance  # agreement first, features break ties
        return _fill(rho[int(np.nanargmin(distance))], self.partner_mean_)


class LowRank(CatalogBaseline):
    def fit(self, catalog):
        super().fit(catalog)
        residual = _fill(catalog.rho, self.partner_mean_[None]) - self.partner_mean_[None]
        residual = np.nan_to_num(residual)  # a cell no workload knows (all of them without co-location data)
        _, _, vt = np.linalg.svd(residual.reshape(len(residual), -1), full_matrices=False)
        self.basis_ = vt[: self.rank]  # (r, P*G)
        return self

    def predict_rho(self, features, observations=()):
        shape = self.partner_mean_.shape
        if not observations:
            return self.partner_mean_.copy()
        cells = [p * shape[1] + a for p, a, _, _ in observations]
        target = np.array([r - self.partner_mean_[p, a] for p, a, r, _ in observations])
        basis = self.basis_[:, cells].T  # (n_obs, r)
        z = np.linalg.solve(basis.T @ basis + self.ridge * np.eye(self.rank), basis.T @ target)
        return np.clip(self.partner_mean_ + (z @ self.basis_).reshape(shape), 0.0, 1.0)


BASELINES = {
    "global_mean": GlobalMean,
    "partner_mean": PartnerMean,
    "family_nearest": FamilyNearest,
    "nearest_neighbour": NearestNeighbour,
    "low_rank": LowRank,
}


def _nanmean(values, axis):
    with warnings.catch_warnings():  # an all-NaN slice is an unknown cell, not a problem
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def _fill(values, fallback):
    return np.where(np.isnan(values), fallback, values)
