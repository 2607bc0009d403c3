"""P2: one running job's estimates, refined online from its observations.

Each observation (1) joins the job's fingerprint, which the network uses to re-weight the
catalog's workloads by how well they agree with the job, so unobserved GPU types and partners
move too, and (2) takes `p2_steps` Adam steps (learning rate `p2_learning_rate`, default 0.01,
cosine-decayed to 0 over the steps) on a per-GPU-type bias of rho fitted to the residuals of
the observed cells under a ridge prior; the bias carries over from one update to the next.
Observed cells report the observed mean. Everything is clipped to [0, 1]; one update costs two
small forward passes (see the benchmark's latency).

The structured predictor (structured.py) has no network: its P2 is the Gaussian-process
posterior of the job's residuals from the prior, and isolated observations shift the
throughput of the GPU types they were made on (multi-GPU configurations follow through the
communication model); closed form, no learning rate.

A workload the catalog already holds starts from the catalog's values for the cells it knows
(they are measurements, better than any model's guess), but the running job may deviate from
the reference: its observations replace the catalog's value of the cells they observe, and
move the catalog's other cells (the structured predictor's Gaussian process takes the
catalog's row as its prior; for a network, a catalog cell moves by the mean deviation from the
catalog observed on its GPU type: a difference for rho, a ratio for throughput).
"""
import math
from collections import defaultdict

import numpy as np

from .errors import UnknownGpuType


class JobEstimate:
    def __init__(self, model, features):
        self.model = model
        self.features = features
        self.x = model.query_vector(features)
        self.batch = features.batch_size or 1
        catalog = model.catalog_
        self.own = catalog.workloads.index(features.name) if features.name in catalog.workloads else None
        self.rho_obs = defaultdict(list)  # (partner index, gpu index) -> [(rho of job, rho of partner)]
        self.tau_obs = defaultdict(list)  # config index -> [steps/s]
        self.bias = np.zeros(len(catalog.gpu_types))
        self.gpu_of_config = np.array([catalog.gpu_types.index(c[0]) for c in catalog.configs])
        # The catalog's row of this workload (NaN where unknown or not in the catalog).
        self.catalog_rho = np.full(catalog.rho.shape[1:], np.nan) if self.own is None else catalog.rho[self.own]
        self.catalog_tau = np.full(catalog.tau.shape[1:], np.nan) if self.own is None else catalog.tau[self.own]
        structured = getattr(model, "structured_", None)
        if structured is not None:
            self._prior_rho = _anchored_rho(*structured.rho(features), self.catalog_rho)
            self._prior_tau = _anchored_log_tau(*structured.log_tau(features), self.catalog_tau)
            comm = structured.communication(features)  # the catalog's own where it measured the job
            self._comm = (
                comm if self.own is None else np.where(np.isnan(self.catalog_tau), comm, structured.comm_[self.own])
            )
        self._refresh()

    # ---- observations ---------------------------------------------------------------------
    def observe(self, observation, learn: bool = True) -> None:
        catalog = self.model.catalog_
        a = catalog.gpu_index(observation.gpu_type)
        if observation.partner is None:
            key = (observation.gpu_type, observation.num_gpus, observation.consolidated)
            if key not in catalog.configs:
                raise UnknownGpuType(f"no configuration {observation.num_gpus} x {observation.gpu_type} in the catalog")
            self.tau_obs[catalog.configs.index(key)].append(observation.throughput)
        else:
            p = catalog.index(observation.partner)
            alone = self._tau[self.model.single_[a]]
            row = _fraction(observation.throughput, alone)
            partner_alone = catalog.tau[p, self.model.single_[a]]
            col = math.nan if observation.partner_throughput is None else _fraction(observation.partner_throughput,
                                                                                     partner_alone)
            self.rho_obs[(p, a)].append((row, col))
        self._refresh()
        if learn and self.rho_obs and getattr(self.model, "structured_", None) is None:
            self._fit_bias()

    def _observation_list(self):
        rho = [(p, a, float(np.mean([r for r, _ in v])), float(np.nanmean([c for _, c in v]))
                if any(not math.isnan(c) for _, c in v) else math.nan) for (p, a), v in self.rho_obs.items()]
        tau = [(c, float(np.mean(v))) for c, v in self.tau_obs.items()]
        return rho, tau

    def _refresh(self) -> None:
        rho_obs, tau_obs = self._observation_list()
        structured = getattr(self.model, "structured_", None)
        if structured is not None:
            log_tau, tau_std = self._prior_tau
            self._tau, self._tau_std = np.exp(structured.tau_shift(log_tau, tau_obs, self._comm)), tau_std.copy()
            self._tau[self.catalog_tau == 0] = 0.0  # measured not to fit
            for c, steps in tau_obs:
                self._tau[c], self._tau_std[c] = steps, 0.0
            self._rho, self._rho_std = structured.rho_posterior(*self._prior_rho, [o[:3] for o in rho_obs])
            return
        log_tau, self._tau_std = self.model.forward_tau(self.x, self.features.family, self.batch, tau_obs)
        self._tau, self._tau_std = np.exp(log_tau.astype(float)), self._tau_std.astype(float)
        rho, rho_std = self.model.forward_rho(self.x, self.features.family, rho_obs)
        self._rho, self._rho_std = rho.astype(float), rho_std.astype(float)
        known = ~np.isnan(self.catalog_tau)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = [(self.gpu_of_config[c], math.log(steps / self.catalog_tau[c]))
                         for c, steps in tau_obs if known[c] and self.catalog_tau[c] > 0 and steps > 0]
        shift = _mean_by_gpu_type(log_ratio, len(self.bias))
        self._tau[known] = (self.catalog_tau * np.exp(shift[self.gpu_of_config]))[known]
        for c, steps in tau_obs:
            self._tau[c], self._tau_std[c] = steps, 0.0

    def _fit_bias(self) -> None:
        """Adam on the per-GPU-type bias, lr cosine-decayed over p2_steps."""
        cells = [(p, a, np.mean([r for r, _ in v])) for (p, a), v in self.rho_obs.items()]
        idx_a = np.array([c[1] for c in cells])
        target = np.array([c[2] for c in cells])
        base = self._rho[np.array([c[0] for c in cells]), idx_a]
        m, v = np.zeros_like(self.bias), np.zeros_like(self.bias)
        steps, lr, n = self.model.p2_steps, self.model.p2_learning_rate, len(cells)
        for t in range(1, steps + 1):
            residual = base + self.bias[idx_a] - target
            grad = np.bincount(idx_a, weights=2 * residual, minlength=len(self.bias)) / n
            grad += 2 * self.model.p2_prior * self.bias / n
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad**2
            step_lr = lr * 0.5 * (1 + math.cos(math.pi * (t - 1) / steps))
            self.bias -= step_lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)

    # ---- estimates ------------------------------------------------------------------------
    def prediction(self):
        from .estimator import Prediction

        catalog = self.model.catalog_
        rho = self._rho + self.bias[None, :]
        known = ~np.isnan(self.catalog_rho)
        if getattr(self.model, "structured_", None) is None:  # a network: same-type mean deviation
            deviation = [(a, float(np.mean([r for r, _ in v])) - self.catalog_rho[p, a])
                         for (p, a), v in self.rho_obs.items() if self.catalog_rho[p, a] > 0]
            shift = _mean_by_gpu_type(deviation, rho.shape[1])
            rho[known] = np.where(self.catalog_rho > 0, self.catalog_rho + shift[None, :], 0.0)[known]
        rho = np.clip(rho, 0.0, 1.0)
        rho_std, rho_measured = self._rho_std.copy(), known.copy()
        # A catalog cell's doubt: how far the job's observations have moved it from the reference.
        rho_std[known] = np.abs(rho - np.nan_to_num(self.catalog_rho))[known]
        tau, tau_std = self._tau.copy(), self._tau_std.copy()
        tau_measured = ~np.isnan(self.catalog_tau)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau_std[tau_measured] = np.nan_to_num(np.abs(np.log(tau / self.catalog_tau)))[tau_measured]
        for (p, a), values in self.rho_obs.items():
            rho[p, a] = np.clip(np.mean([r for r, _ in values]), 0.0, 1.0)
            rho_std[p, a], rho_measured[p, a] = (np.std([r for r, _ in values]) if len(values) > 1 else 0.02), True
        for c in self.tau_obs:
            tau_measured[c], tau_std[c] = True, 0.0
        return Prediction(
            workload=self.features.name,
            partners=list(catalog.workloads),
            gpu_types=list(catalog.gpu_types),
            configs=list(catalog.configs),
            rho=rho,
            rho_std=rho_std,
            tau=tau,
            tau_std=tau_std,
            rho_measured=rho_measured,
            tau_measured=tau_measured,
            low_confidence=not rho_measured.any(),
        )


def _mean_by_gpu_type(pairs, n_types: int) -> np.ndarray:
    """Mean of the values of [(GPU type index, value)] per type; 0 for types without any."""
    total, count = np.zeros(n_types), np.zeros(n_types)
    for a, value in pairs:
        total[a] += value
        count[a] += 1
    return np.divide(total, count, out=np.zeros(n_types), where=count > 0)


def _anchored_rho(rho, std, catalog_rho):
    """The structured prior of a catalog workload: the catalog's rho where it knows it (spread
    0), the model's elsewhere."""
    known = ~np.isnan(catalog_rho)
    return np.where(known, catalog_rho, rho), np.where(known, 0.0, std)


def _anchored_log_tau(log_tau, std, catalog_tau):
    """As _anchored_rho for log steps/s; a configuration the catalog measured as not fitting
    (0 steps/s) keeps the model's value as a prior but is reported 0 until observed."""
    known = ~np.isnan(catalog_tau) & (np.nan_to_num(catalog_tau) > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(known, np.log(catalog_tau), log_tau), np.where(known, 0.0, std)


def _fraction(throughput: float, alone: float) -> float:
    if alone is None or math.isnan(alone) or alone <= 0:
        return math.nan
    return min(1.0, max(0.0, throughput / alone))
