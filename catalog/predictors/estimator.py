"""P1 and P2: the performance predictor, an sklearn-style estimator over a CatalogData.

`fit` trains two NeighbourNets (co-located fraction rho, isolated throughput tau) by
leave-one-out episodes over the catalog: each workload in turn plays the new job, every record
that involves it hidden, with 0-10 of its own cells revealed as observations so one network
serves P1 (no observations; one-shot = one profiled throughput) and P2 (observations of the
running job). `job()` returns a JobEstimate whose `observe` is P2's online update.
"""
import io
import math
from dataclasses import dataclass

import numpy as np
import torch

from .data import CatalogData
from .errors import UnknownGpuType
from .features import WorkloadFeatures, feature_vector
from .nets import NeighbourNet
from .online import JobEstimate
from .state_checks import catalog_from_state, check_net_weights, check_structured_state
from .structured import StructuredModel
from .tokens import rho_tokens, tau_tokens

#: The three networks (docs/predictors.md, "Models").
NET_ARCHITECTURES = ("feedforward", "rnn", "transformer")
#: Every model selectable by name: the networks and the structured predictor (no network),
#: which wins the benchmark and is the default (README, "Predictor benchmark").
ARCHITECTURES = NET_ARCHITECTURES + ("structured",)
_OBSERVATION_COUNTS = (0, 0, 1, 2, 3, 5, 10)
#: Standardised features are clipped to this many standard deviations: no extrapolation.
FEATURE_CLIP = 3.0
#: Bound of the tau network's correction, in log samples/s (x / 1.65 at most).
TAU_MAX_CORRECTION = 0.5
#: A catalog without co-location records predicts rho 0 (no pair assumed to fit, so nothing is
#: co-located on a guess) with this spread, as the structured predictor does (docs/predictors.md).
NO_COLOCATION_RHO_STD = 0.1
#: The hyperparameters, in get_params order (the estimator's __init__ arguments).
PARAMS = ("architecture", "hidden", "epochs", "learning_rate", "batch_size", "draws", "cells_per_episode", "seed",
          "p2_learning_rate", "p2_steps", "p2_prior")


@dataclass(frozen=True, slots=True)
class Observation:
    """What telemetry saw of a running job: alone (partner None) or sharing a GPU."""

    gpu_type: str
    throughput: float
    partner: str | None = None
    partner_throughput: float | None = None
    num_gpus: int = 1
    consolidated: bool = True


@dataclass
class Prediction:
    """Estimates for one job: rho[p, a] over the catalog's partners and GPU types, tau[c] over
    configurations, each with a standard deviation; `measured` marks cells set by observation."""

    workload: str
    partners: list[str]
    gpu_types: list[str]
    configs: list[tuple[str, int, bool]]
    rho: np.ndarray
    rho_std: np.ndarray
    tau: np.ndarray
    tau_std: np.ndarray  # relative (log-space) standard deviation
    rho_measured: np.ndarray
    tau_measured: np.ndarray
    low_confidence: bool

    def isolated(self, gpu_type: str, num_gpus: int = 1, consolidated: bool = True) -> float:
        key = (gpu_type, num_gpus, consolidated)
        if key not in self.configs:
            raise UnknownGpuType(f"no prediction for {num_gpus} x {gpu_type} (known: {', '.join(self.gpu_types)})")
        return float(self.tau[self.configs.index(key)])


class PerformancePredictor:
    """Defaults of the networks' training: 8 epochs of mini-batches of 128 episode cells
    (about 100 Adam steps per network). Chosen on validation splits of two training catalogs'
    own episodes (one sixth of them held out), where it matches 25 epochs of batches of 1024
    (about 50 steps) in about half the time; no benchmark score entered the choice."""

    def __init__(self, architecture="transformer", hidden=16, epochs=8, learning_rate=1e-2, batch_size=128,
                 draws=2, cells_per_episode=24, seed=0, p2_learning_rate=0.01, p2_steps=20, p2_prior=1.0):
        self.architecture = architecture
        self.hidden = hidden
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.draws = draws
        self.cells_per_episode = cells_per_episode
        self.seed = seed
        self.p2_learning_rate = p2_learning_rate
        self.p2_steps = p2_steps
        self.p2_prior = p2_prior

    def get_params(self) -> dict:
        return {k: getattr(self, k) for k in PARAMS}

    def check_params(self) -> None:
        """ValueError naming the first hyperparameter out of range: an architecture that is not
        one of ARCHITECTURES, a count that is not a whole number >= 1 (0 epochs would store an
        untrained network), a rate that is not a finite number > 0."""
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {self.architecture!r}; choose one of {', '.join(ARCHITECTURES)}")
        for key in ("hidden", "epochs", "batch_size", "draws", "cells_per_episode", "p2_steps"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"hyperparameter {key} must be a whole number >= 1, not {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"hyperparameter seed must be a whole number >= 0, not {self.seed!r}")
        for key, low in (("learning_rate", 0.0), ("p2_learning_rate", 0.0), ("p2_prior", None)):
            value = getattr(self, key)
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or value < 0 or (low is not None and value <= low)):
                bound = "> 0" if low is not None else ">= 0"
                raise ValueError(f"hyperparameter {key} must be a finite number {bound}, not {value!r}")

    # ---- training -------------------------------------------------------------------------
    def fit(self, catalog: CatalogData, init: "PerformancePredictor | None" = None) -> "PerformancePredictor":
        """Train on every workload of `catalog`; `init` starts from imported weights (fine-tuning)."""
        self.check_params()
        self._set_catalog(catalog)
        if self.architecture == "structured":
            # Nothing to fine-tune: the structure is refitted on the local catalog, so `init`
            # (imported weights) has nothing to add.
            self.structured_ = StructuredModel().fit(catalog)
            self.train_mae_, self.train_loss_ = self.structured_.train_mae_, {}
            return self
        self.structured_ = None
        rng = np.random.default_rng(self.seed)
        torch.manual_seed(self.seed)
        rho_examples, tau_examples, zero = self._episodes(rng)
        self.rho_net_ = NeighbourNet(self.architecture, rho_examples[0].shape[-1], self.hidden)
        self.tau_net_ = NeighbourNet(self.architecture, tau_examples[0].shape[-1], self.hidden, TAU_MAX_CORRECTION)
        if init is not None:
            try:
                self.rho_net_.load_state_dict(init.rho_net_.state_dict())
                self.tau_net_.load_state_dict(init.tau_net_.state_dict())
            except RuntimeError as exc:
                raise ValueError(f"the initial weights do not fit this catalog (GPU types "
                                 f"{init.catalog_.gpu_types} vs {catalog.gpu_types}): {exc}") from None
        self.train_loss_ = {
            "rho": _train(self.rho_net_, rho_examples, self, rng),
            "tau": _train(self.tau_net_, tau_examples, self, rng),
        }
        prediction, _ = _infer(self.rho_net_, *(a[zero] for a in rho_examples[:3]), int(zero.sum()), 1)
        errors = np.abs(np.clip(prediction[:, 0], 0, 1) - rho_examples[3][zero])
        self.train_mae_ = float(errors.mean()) if errors.size else math.nan  # NaN: no co-location records
        return self

    def _set_catalog(self, catalog: CatalogData) -> None:
        raw = np.array([[np.nan if v is None else v for v in feature_vector(f)] for f in catalog.features])
        known = np.where(np.isnan(raw).all(axis=0), 0.0, raw)
        self.feature_mean_ = np.nanmean(known, axis=0)
        filled = np.where(np.isnan(raw), self.feature_mean_, raw)
        std = filled.std(axis=0)
        self.feature_std_ = np.where(std > 0, std, 1.0)
        self.catalog_ = catalog
        self.x_ = np.clip((filled - self.feature_mean_) / self.feature_std_, -FEATURE_CLIP, FEATURE_CLIP)
        self.batches_ = np.array([f.batch_size or 1 for f in catalog.features], dtype=float)
        with np.errstate(divide="ignore"):
            self.log_tau_ = np.where(catalog.tau > 0, np.log(np.where(catalog.tau > 0, catalog.tau, 1.0)), np.nan)
        g = len(catalog.gpu_types)
        self.config_feats_ = np.array(
            [[*np.eye(g)[catalog.gpu_types.index(a)], math.log2(n), float(cons)] for a, n, cons in catalog.configs]
        )
        self.single_ = [catalog.configs.index((a, 1, True)) for a in catalog.gpu_types]

    def _episodes(self, rng):
        """Leave-one-out episodes: each workload in turn is the new job. Draw 0 sees the rest of
        the catalog with no observations (P1), draw 1 a random number of observed cells (P2),
        draw 2 the catalog without the job's whole family (P1 for an unseen family)."""
        catalog = self.catalog_
        rho_parts, tau_parts, zero_shot = [], [], []
        w, g = len(catalog.workloads), len(catalog.gpu_types)
        for q in range(w):
            others = [i for i in range(w) if i != q]
            other_families = [i for i in others if catalog.families[i] != catalog.families[q]]
            contexts = [others] * self.draws + ([other_families] if len(other_families) < len(others) else [])
            for draw, ctx in enumerate(contexts):
                ctx = np.array(ctx)
                count = int(rng.choice(_OBSERVATION_COUNTS)) if draw == 1 else 0
                rho_parts.append(self._rho_episode(q, ctx, count, rng))
                zero_shot.append(np.full(len(rho_parts[-1][3]), count == 0 and draw == 0))
                tau_parts.append(self._tau_episode(q, ctx, min(draw, g), rng))
        return _stack(rho_parts), _stack(tau_parts), np.concatenate(zero_shot)

    def _rho_episode(self, q, ctx, count, rng):
        catalog, g = self.catalog_, len(self.catalog_.gpu_types)
        cells = [(p, a) for p in range(len(ctx)) for a in range(g) if not np.isnan(catalog.rho[q, ctx[p], a])]
        picked = [cells[i] for i in rng.permutation(len(cells))[:count]]
        obs = [(p, a, catalog.rho[q, ctx[p], a], catalog.rho[ctx[p], q, a]) for p, a in picked]
        fams = [catalog.families[i] for i in ctx]
        tokens, values, mask = rho_tokens(self.x_[q], catalog.families[q], self.x_[ctx], fams,
                                          catalog.rho[np.ix_(ctx, ctx)], obs)
        target = catalog.rho[q, ctx, :].reshape(-1)
        keep = ~np.isnan(target)
        keep[[p * g + a for p, a in picked]] = False
        keep = np.flatnonzero(keep)
        keep = np.sort(rng.permutation(keep)[: self.cells_per_episode])  # a sample of cells: speed
        return tokens[keep], values[keep], mask[keep], target[keep]

    def _tau_episode(self, q, ctx, count, rng):
        catalog = self.catalog_
        target = self.log_tau_[q]
        singles = [c for c in self.single_ if not np.isnan(target[c])]
        picked = [singles[i] for i in rng.permutation(len(singles))[:count]]
        obs = [(c, math.exp(target[c])) for c in picked]
        tokens, values, mask = tau_tokens(self.x_[q], catalog.families[q], self.batches_[q], self.x_[ctx],
                                          [catalog.families[i] for i in ctx], self.batches_[ctx], self.log_tau_[ctx],
                                          self.config_feats_, obs)
        keep = ~np.isnan(target)
        keep[picked] = False
        return tokens[keep], values[keep], mask[keep], target[keep]

    # ---- inference ------------------------------------------------------------------------
    def features_of(self, workload: str) -> WorkloadFeatures:
        return self.catalog_.features[self.catalog_.index(workload)]

    def job(self, features: WorkloadFeatures, profile: dict | None = None) -> JobEstimate:
        """P2 state for a new job; `profile` = {(gpu_type, GPUs, consolidated): steps/s} for one-shot."""
        estimate = JobEstimate(self, features)
        for (gpu_type, num_gpus, consolidated), steps in (profile or {}).items():
            estimate.observe(Observation(gpu_type, steps, num_gpus=num_gpus, consolidated=consolidated), learn=False)
        return estimate

    def predict(self, features: WorkloadFeatures, profile: dict | None = None) -> Prediction:
        """P1: zero-shot from features, one-shot with a profiled throughput."""
        return self.job(features, profile).prediction()

    def query_vector(self, features: WorkloadFeatures) -> np.ndarray:
        raw = np.array([np.nan if v is None else v for v in feature_vector(features)])
        scaled = (np.where(np.isnan(raw), self.feature_mean_, raw) - self.feature_mean_) / self.feature_std_
        return np.clip(scaled, -FEATURE_CLIP, FEATURE_CLIP)

    def forward_rho(self, x, family, observations):
        c = self.catalog_
        if np.isnan(c.rho).all():  # an untrained rho network would answer noise
            shape = (len(c.workloads), len(c.gpu_types))
            return np.zeros(shape), np.full(shape, NO_COLOCATION_RHO_STD)
        tokens, values, mask = rho_tokens(x, family, self.x_, c.families, c.rho, observations)
        return _infer(self.rho_net_, tokens, values, mask, len(c.workloads), len(c.gpu_types))

    def forward_tau(self, x, family, batch, observations):
        c = self.catalog_
        tokens, values, mask = tau_tokens(x, family, batch, self.x_, c.families, self.batches_, self.log_tau_,
                                          self.config_feats_, observations)
        mean, std = _infer(self.tau_net_, tokens, values, mask, len(c.configs), 1)
        return mean[:, 0], std[:, 0]

    # ---- persistence ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Weights and the catalog snapshot they predict from; plain tensors, lists and numbers
        only, so torch.load(..., weights_only=True) reads it back."""
        c = self.catalog_
        if self.structured_ is not None:
            learned = {"structured": self.structured_.state()}
        else:
            learned = {"rho_net": self.rho_net_.state_dict(), "tau_net": self.tau_net_.state_dict()}
        return {
            "params": self.get_params(),
            **learned,
            "catalog": {
                "workloads": list(c.workloads),
                "features": [[f.name, f.family, f.batch_size, f.parameters, f.flops_per_sample, f.compute_density,
                              f.memory_intensity, f.communication_overhead] for f in c.features],
                "gpu_types": list(c.gpu_types),
                "configs": [list(cfg) for cfg in c.configs],
                "tau": torch.from_numpy(c.tau.copy()),
                "rho": torch.from_numpy(c.rho.copy()),
                "samples": torch.from_numpy(c.samples.copy()),
            },
        }

    @classmethod
    def from_state_dict(cls, state: dict) -> "PerformancePredictor":
        """The model a state_dict describes. Every part is checked first (shapes, finite values,
        hyperparameters; state_checks.py): a state may come from another cluster's export, and
        anything wrong is a ValueError saying what, not an error inside a later prediction."""
        if not isinstance(state, dict):
            raise ValueError("the state is not a dictionary")
        catalog = catalog_from_state(state.get("catalog"))
        params = state.get("params")
        if not isinstance(params, dict):
            raise ValueError("the state has no hyperparameters ('params')")
        unknown = sorted(set(params) - set(PARAMS), key=str)
        if unknown:
            raise ValueError(f"unknown hyperparameters {', '.join(map(str, unknown))}")
        model = cls(**params)
        model.check_params()
        return model._restore(catalog, state)

    def _restore(self, catalog: CatalogData, learned: dict) -> "PerformancePredictor":
        """Set the catalog and the learned numbers (`learned`: a state_dict's "structured" or
        "rho_net" and "tau_net" entries)."""
        self._set_catalog(catalog)
        if self.architecture == "structured":
            fitted = check_structured_state(learned.get("structured"), len(catalog.gpu_types))
            self.structured_ = StructuredModel.from_state(catalog, fitted)
            self.train_mae_ = self.structured_.train_mae_
            return self
        self.structured_ = None
        self.train_mae_ = math.nan  # a network's state does not keep it
        rho_dim = check_net_weights(learned.get("rho_net"), "rho_net")
        tau_dim = check_net_weights(learned.get("tau_net"), "tau_net")
        self.rho_net_ = NeighbourNet(self.architecture, rho_dim, self.hidden)
        self.tau_net_ = NeighbourNet(self.architecture, tau_dim, self.hidden, TAU_MAX_CORRECTION)
        for net, key in ((self.rho_net_, "rho_net"), (self.tau_net_, "tau_net")):
            try:
                net.load_state_dict(learned[key])
            except RuntimeError as exc:
                raise ValueError(f"{key} does not fit a {self.architecture} network of {self.hidden} "
                                 f"hidden units: {str(exc).splitlines()[0]}") from None
        return self

    def without(self, names) -> "PerformancePredictor":
        """A copy predicting from its catalog snapshot with every record involving `names`
        hidden, its learned numbers kept (nothing refitted): how an imported model, which may
        hold the local validation workloads, is scored on them as on workloads it never saw."""
        state = self.state_dict()
        return type(self)(**self.get_params())._restore(self.catalog_.without(names), state)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        torch.save(self.state_dict(), buffer)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "PerformancePredictor":
        return cls.from_state_dict(torch.load(io.BytesIO(data), weights_only=True))


def _stack(parts):
    """Concatenate episodes, padding the neighbour axis with masked-out tokens."""
    width = max(p[0].shape[1] for p in parts)
    padded = [[], [], [], []]
    for tokens, values, mask, target in parts:
        pad = width - tokens.shape[1]
        padded[0].append(np.pad(tokens, ((0, 0), (0, pad), (0, 0))))
        padded[1].append(np.pad(values, ((0, 0), (0, pad))))
        padded[2].append(np.pad(mask, ((0, 0), (0, pad))))
        padded[3].append(target)
    return [np.concatenate(p) for p in padded]


def _train(net: NeighbourNet, examples, params: PerformancePredictor, rng) -> float:
    tokens, values, mask, target = (torch.from_numpy(np.ascontiguousarray(a)) for a in examples)
    target = target.float()
    optimiser = torch.optim.Adam(net.parameters(), lr=params.learning_rate, weight_decay=1e-5)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=max(params.epochs, 1))
    n = len(target)
    loss_value = math.nan
    net.train()
    for _ in range(params.epochs):
        order = torch.from_numpy(rng.permutation(n))
        total = 0.0
        for start in range(0, n, params.batch_size):
            batch = order[start:start + params.batch_size]
            prediction, _ = net(tokens[batch], values[batch], mask[batch])
            loss = (prediction - target[batch]).abs().mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        schedule.step()
        loss_value = total / max(n, 1)
    net.eval()
    return loss_value


def _infer(net, tokens, values, mask, rows, cols):
    """Mean and spread (attention-weighted standard deviation of the neighbours' values)."""
    with torch.no_grad():
        v = torch.from_numpy(values)
        prediction, weights = net(torch.from_numpy(tokens), v, torch.from_numpy(mask))
        spread = (weights * (v - prediction.unsqueeze(-1)) ** 2).sum(-1).sqrt()
    return prediction.numpy().reshape(rows, cols), spread.numpy().reshape(rows, cols)
