"""P2: one running job's estimates, refined online from its observations.

Each observation (1) joins the job's fingerprint, which the network uses to re-weight the
catalog's workloads by how well they agree with the job, so unobserved GPU types and partners
move too, and (2) takes `p2_steps` Adam steps (learning rate `p2_learning_rate`, default 0.01,
cosine-decayed to 0 over the steps) on a per-GPU-type bias of rho fitted to the residuals of
the observed cells under a ridge prior; the bias carries over from one update to the next. Observed cells report the observed mean. Everything is
clipped to [0, 1]; one update costs two small forward passes (see the benchmark's latency).

The structured predictor (structured.py) has no network: its P2 is the Gaussian-process
posterior of the job's residuals from the prior, and isolated observations shift the
throughput of the GPU types they were made on; closed form, no learning rate.
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
        structured = getattr(model, "structured_", None)
        if structured is not None:
            self._prior_rho = structured.rho(features)
            self._prior_tau = structured.log_tau(features)
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
            self._tau, self._tau_std = np.exp(structured.tau_shift(log_tau, tau_obs)), tau_std.copy()
            for c, steps in tau_obs:
                self._tau[c], self._tau_std[c] = steps, 0.0
            self._rho, self._rho_std = structured.rho_posterior(*self._prior_rho, [o[:3] for o in rho_obs])
            return
        log_tau, self._tau_std = self.model.forward_tau(self.x, self.features.family, self.batch, tau_obs)
        self._tau, self._tau_std = np.exp(log_tau.astype(float)), self._tau_std.astype(float)
        for c, steps in tau_obs:
            self._tau[c], self._tau_std[c] = steps, 0.0
        rho, rho_std = self.model.forward_rho(self.x, self.features.family, rho_obs)
        self._rho, self._rho_std = rho.astype(float), rho_std.astype(float)

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
        rho = np.clip(self._rho + self.bias[None, :], 0.0, 1.0)
        rho_std = self._rho_std.copy()
        rho_measured = np.zeros(rho.shape, dtype=bool)
        tau, tau_std = self._tau.copy(), self._tau_std.copy()
        tau_measured = np.zeros(len(tau), dtype=bool)
        if self.own is not None:
            known = ~np.isnan(catalog.rho[self.own])
            rho[known], rho_std[known], rho_measured[known] = catalog.rho[self.own][known], 0.0, True
            known_tau = ~np.isnan(catalog.tau[self.own])
            tau[known_tau], tau_std[known_tau], tau_measured[known_tau] = catalog.tau[self.own][known_tau], 0.0, True
        for (p, a), values in self.rho_obs.items():
            rho[p, a] = np.clip(np.mean([r for r, _ in values]), 0.0, 1.0)
            rho_std[p, a], rho_measured[p, a] = (np.std([r for r, _ in values]) if len(values) > 1 else 0.02), True
        for c in self.tau_obs:
            tau_measured[c] = True
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


def _fraction(throughput: float, alone: float) -> float:
    if alone is None or math.isnan(alone) or alone <= 0:
        return math.nan
    return min(1.0, max(0.0, throughput / alone))
