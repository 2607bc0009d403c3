"""The structured predictor: what the catalog's structure says about a new workload, no network.

Three facts of the data carry most of the signal (docs/predictors.md, "Structured predictor"):

- **Within a family, performance moves smoothly with batch size.** rho of a new workload next
  to partner p on GPU type a is interpolated, in log batch size, between the same-family
  workloads of the nearest smaller and larger batch (the nearest one beyond the family's
  range); isolated throughput likewise in log steps/s, with a slope clipped to [-1, 0] when it
  is extrapolated (steps/s never rise with the batch, samples/s never fall). An unseen family
  gets the partner's mean over the catalog's families, each family weighing once (rho), or
  the catalog's median compute rate per configuration (tau).
- **A multi-GPU step is a 1-GPU step plus communication.** n GPUs run n / (1 / tau_1 + c)
  steps/s (the catalog counts the n GPUs' steps together), where c, the seconds a step spends
  in the all-reduce and waiting, is interpolated linearly in batch size within the family. So
  a job seen to be faster or slower than its neighbours on one GPU keeps their communication
  time rather than their speed-up factor.
- **A pair that does not fit in memory runs at 0.** Each workload gets a memory footprint
  m(w, a) = alpha_a + beta_a x (FLOPs per sample x batch size) / reference, the product being
  a proxy of activation memory that needs no measurement; alpha, beta per GPU type are fitted
  by logistic regression to which catalog pairs fit (P(fit) = sigmoid(k (1 - m_w - m_p))).
  A pair predicted not to fit (P < 1/2) is predicted 0; interpolation only uses pairs that fit.
- **A job's errors are correlated across cells.** P2 treats the residual (observation minus
  prior) of the job's row as a Gaussian process over cells (partner, GPU type) with a kernel
  of a common offset, a per-GPU-type offset, a per-partner offset and a per-(partner family,
  GPU type) offset, whose variances are measured (method of moments) on the catalog's own
  leave-one-out residuals; one observation moves every cell of the same GPU type or partner
  by the posterior mean. The variances are measured on the cells where the pair both fits
  and is predicted to (the only cells the process moves). Isolated throughputs likewise: a
  Gaussian process over configurations in log steps/s (common, same GPU type, same number of
  GPUs); unobserved multi-GPU configurations are then rebuilt from the posterior 1-GPU
  throughputs and the communication times.
"""
import math
import warnings

import numpy as np
import torch

from .data import CatalogData
from .transfer import suite_transfer

#: Logistic sharpness of the memory model (per unit of normalised memory).
MEMORY_SHARPNESS = 20.0
MEMORY_STEPS = 300
#: Range the slope of log steps/s against log batch size is clipped to when extrapolating.
TAU_SLOPE = (-1.0, 0.0)
#: Observation noise of a measured log throughput (a profiled value is close to exact).
TAU_JITTER = 1e-3
#: Kernel components, in this order: common, GPU type, partner, partner family x GPU type.
KERNEL_PARTS = ("common", "gpu_type", "partner", "family_gpu")


def batch_flops(features) -> float | None:
    """FLOPs of one step (per sample x batch size): the memory proxy; None when unknown."""
    if features.flops_per_sample is None:
        return None
    return float(features.flops_per_sample) * float(features.batch_size or 1)


class StructuredModel:
    """Fitted on a CatalogData; `rho`, `log_tau` give P1, `rho_posterior`, `tau_shift` P2."""

    def fit(self, catalog: CatalogData) -> "StructuredModel":
        self.catalog_ = catalog
        self.transfer_weights_ = {}
        with np.errstate(divide="ignore"):
            self.log_tau_ = np.where(catalog.tau > 0, np.log(np.where(catalog.tau > 0, catalog.tau, 1.0)), np.nan)
        self.log_batch_ = np.array([math.log(f.batch_size or 1) for f in catalog.features])
        self.memory_ = fit_memory(catalog)
        self.relative_flops_ = _relative_flops(catalog, self.memory_[2])
        self.gpu_of_config_ = np.array([catalog.gpu_types.index(c[0]) for c in catalog.configs])
        self.setup_of_config_ = _setups(catalog)
        self._set_communication()
        residuals, fitting = self._leave_one_out_residuals()
        with warnings.catch_warnings():  # no residual without co-location records: the MAE is unknown (NaN)
            warnings.simplefilter("ignore", RuntimeWarning)
            self.train_mae_ = float(np.nanmean(np.abs(residuals)))
        self.kernel_ = residual_kernel(np.where(fitting, residuals, np.nan), catalog.families)
        self.tau_kernel_ = tau_residual_kernel(self._leave_one_out_tau(), self.gpu_of_config_, self.setup_of_config_)
        return self

    # ---- P1 -------------------------------------------------------------------------------
    def rho(self, features, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """rho (P, G) over the catalog's partners and GPU types, and its standard deviation."""
        return self.combine(*self.rho_values(features, exclude), self.memory_scale(features))

    def combine(self, value, spread, scale) -> tuple[np.ndarray, np.ndarray]:
        """rho from the values a pair that fits would have and the job's memory scale."""
        fit = self.fit_probability(scale)
        predicted = np.where(fit < 0.5, 0.0, value)
        std = np.sqrt(spread**2 + fit * (1 - fit) * value**2)
        return np.clip(predicted, 0.0, 1.0), std

    def rho_values(self, features, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """What rho would be for each (partner, GPU type) if the pair fits, and its spread."""
        catalog = self.catalog_
        rho = np.where(catalog.rho > 0, catalog.rho, np.nan)  # values of pairs that fit
        if exclude is not None:
            rho[exclude], rho[:, exclude] = np.nan, np.nan
        same = [i for i, f in enumerate(catalog.families) if f == features.family and i != exclude]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            partner_mean = np.nanmean(rho, axis=0)
            if same:
                value, spread = _interpolate(self.log_batch_[same], rho[same], math.log(features.batch_size or 1))
                value = np.where(np.isnan(value), np.nanmean(rho[same], axis=0), value)
            else:  # an unseen family: a draw of a family, so every catalog family counts once
                families = sorted({f for i, f in enumerate(catalog.families) if i != exclude})
                value = np.nanmean([np.nanmean(rho[[i for i, f in enumerate(catalog.families)
                                                    if f == family and i != exclude]], axis=0)
                                    for family in families], axis=0)
                spread = np.nanstd(rho, axis=0)
        value = np.nan_to_num(np.where(np.isnan(value), partner_mean, value), nan=0.0)
        return value, np.nan_to_num(spread, nan=0.1)

    def memory_scale(self, features) -> float:
        """The job's FLOPs per step relative to the catalog's (the memory model's x); the
        catalog's median where FLOPs are unknown."""
        flops = batch_flops(features)
        return flops / self.memory_[2] if flops else float(np.median(self.relative_flops_))

    def fit_probability(self, scale: float) -> np.ndarray:
        """P(the pair fits in memory) for every partner and GPU type (P, G)."""
        alpha, beta, _, partners = self.memory_
        own = alpha + beta * scale
        logits = MEMORY_SHARPNESS * (1.0 - own[None, :] - partners)
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50)))

    def log_tau(self, features, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """log steps/s per configuration and its (log-space) standard deviation."""
        catalog = self.catalog_
        others = [i for i in range(len(catalog.workloads)) if i != exclude]
        same = [i for i in others if catalog.families[i] == features.family]
        if not same:
            return self._transferred(features, others, same, *self._rate_guess(features, others))
        log_batch = math.log(features.batch_size or 1)
        value, spread = _interpolate(self.log_batch_[same], self.log_tau_[same], log_batch, TAU_SLOPE)
        value, spread = self._transferred(features, others, same, value, spread)
        value = self.with_communication(value, self.communication(features, exclude))
        known = ~np.isnan(value)
        if known.all():
            return value, np.nan_to_num(spread, nan=0.3)
        rate_guess, rate_spread = self._rate_guess(features, others)
        return np.where(known, value, rate_guess), np.where(known, np.nan_to_num(spread, nan=0.3), rate_spread)

    def _transferred(self, features, others, same, value, spread):
        """1-GPU log steps/s on the GPU types measured on fewer of the job's family (or, for an
        unseen family, fewer workloads) than another type: carried over from the better-measured
        types through the measured speed ratios (transfer.py), so a few rows on a new type
        (a profiling suite's cases, an import) move the other batch sizes and families by a
        ratio, never to those rows' values. Types measured as fully as the others keep the
        family interpolation."""
        catalog = self.catalog_
        singles = catalog.single_gpu_configs()
        pool = same or others
        counts = np.array([int((~np.isnan(catalog.tau[pool, c])).sum()) for c in singles])
        value, spread = value.copy(), spread.copy()
        for g, a in enumerate(catalog.gpu_types):
            if counts[g] >= counts.max():
                continue
            sources = [b for b in range(len(singles)) if b != g and counts[b] > counts[g]]
            rows = self.log_tau_[others]
            transfer = suite_transfer(a, [catalog.gpu_types[b] for b in sources], rows[:, singles[g]],
                                      rows[:, [singles[b] for b in sources]], [catalog.features[i] for i in others],
                                      weights=self._source_weights(g, sources))
            log_tau, std = transfer.log_tau(value[[singles[b] for b in sources]], features.family,
                                            math.log(features.batch_size or 1), features.compute_density)
            if math.isnan(log_tau):
                continue
            for c, config in enumerate(catalog.configs):
                if config[0] == a and config[1] == 1:
                    value[c], spread[c] = log_tau, std
        return value, spread

    def _source_weights(self, g: int, sources: list[int]) -> np.ndarray:
        """The transfer's source-type weights toward GPU type g, cross-validated on every
        catalog workload measured there, computed once per model (for every job and every
        leave-one-out fold alike: the weights, not the values, see the held-out workload)."""
        key = (g, tuple(sources))
        if key not in self.transfer_weights_:
            catalog, singles = self.catalog_, self.catalog_.single_gpu_configs()
            self.transfer_weights_[key] = suite_transfer(
                catalog.gpu_types[g], [catalog.gpu_types[b] for b in sources], self.log_tau_[:, singles[g]],
                self.log_tau_[:, [singles[b] for b in sources]], catalog.features).weights
        return self.transfer_weights_[key]

    def communication(self, features, exclude: int | None = None) -> np.ndarray:
        """Seconds per step a multi-GPU configuration adds to the 1-GPU step time (all-reduce
        and waiting), interpolated in log batch size within the family; NaN for an unseen
        family or where no same-family workload knows the configuration."""
        same = [i for i, f in enumerate(self.catalog_.families) if f == features.family and i != exclude]
        if not same:
            return np.full(len(self.catalog_.configs), np.nan)
        return _interpolate(np.exp(self.log_batch_[same]), self.comm_[same], float(features.batch_size or 1))[0]

    def with_communication(self, log_tau: np.ndarray, comm: np.ndarray) -> np.ndarray:
        """log steps/s with every multi-GPU configuration that has a communication time
        rebuilt from its GPU type's 1-GPU throughput: n / (1 / tau_1 + comm) (steps/s of the
        n GPUs together, as the catalog counts them). A job faster or slower than its
        neighbours on one GPU keeps their communication time, not their speed-up."""
        step = np.exp(-log_tau[self.single_of_config_]) + comm
        usable = self.multi_ & np.isfinite(comm) & (step > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rebuilt = np.log(self.gpus_of_config_) - np.log(step)
        return np.where(usable, rebuilt, log_tau)

    def _set_communication(self) -> None:
        catalog = self.catalog_
        self.single_of_config_ = np.array([catalog.configs.index((c[0], 1, True)) for c in catalog.configs])
        self.gpus_of_config_ = np.array([float(c[1]) for c in catalog.configs])
        self.multi_ = self.gpus_of_config_ > 1
        with np.errstate(divide="ignore", invalid="ignore"):
            comm = self.gpus_of_config_[None, :] / catalog.tau - 1.0 / catalog.tau[:, self.single_of_config_]
        self.comm_ = np.where((catalog.tau > 0) & self.multi_[None, :] & np.isfinite(comm), comm, np.nan)

    def _rate_guess(self, features, others):
        """An unseen family: the lower of two guesses per configuration. (1) The catalog's
        median compute rate (FLOPs per step x steps/s) divided by the job's FLOPs per step;
        (2) the catalog's throughputs' median weighted by 1 / steps/s, the value that
        minimises the expected relative error were the job any catalog workload. (2) caps
        (1) because a job can be far slower than its FLOPs say (A3C waits on its simulator)
        and an over-estimate costs more relative error than an under-estimate."""
        flops = batch_flops(features)
        log_tau = self.log_tau_[others]
        guess = np.array([_weighted_median(col[~np.isnan(col)], np.exp(-col[~np.isnan(col)])) for col in log_tau.T])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if flops is not None:
                step_flops = np.array([batch_flops(self.catalog_.features[i]) or np.nan for i in others])
                rate = np.nanmedian(log_tau + np.log(step_flops)[:, None], axis=0) - math.log(flops)
                guess = np.fmin(guess, rate)
            spread = np.nanstd(log_tau, axis=0)
        return np.nan_to_num(guess), np.nan_to_num(spread, nan=1.0)

    # ---- P2 -------------------------------------------------------------------------------
    def rho_posterior(self, prior: np.ndarray, std: np.ndarray, observations) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of rho given observed cells [(p, a, rho)]:
        Gaussian-process regression of the residuals of the cells predicted to fit."""
        cells = [(p, a, r) for p, a, r in observations if prior[p, a] > 0 and r > 0]
        if not cells:
            return prior, std
        families = self.catalog_.families
        p_obs = np.array([c[0] for c in cells])
        a_obs = np.array([c[1] for c in cells])
        residual = np.array([c[2] - prior[c[0], c[1]] for c in cells])
        parts = self.kernel_
        k_oo = _kernel(p_obs, a_obs, p_obs, a_obs, families, parts) + parts["noise"] * np.eye(len(cells))
        n_p, n_a = prior.shape
        p_all, a_all = np.repeat(np.arange(n_p), n_a), np.tile(np.arange(n_a), n_p)
        k_so = _kernel(p_all, a_all, p_obs, a_obs, families, parts)
        weights = np.linalg.solve(k_oo, np.column_stack([residual, k_so.T]))
        mean = (k_so @ weights[:, 0]).reshape(n_p, n_a)
        prior_var = sum(parts[k] for k in KERNEL_PARTS)
        shrink = np.clip(1.0 - np.einsum("ij,ji->i", k_so, weights[:, 1:]) / prior_var, 0.0, 1.0).reshape(n_p, n_a)
        fits = prior > 0
        posterior = np.where(fits, np.clip(prior + mean, 0.0, 1.0), prior)
        return posterior, np.where(fits, std * np.sqrt(shrink), std)

    def tau_shift(self, log_tau: np.ndarray, observations, comm: np.ndarray | None = None) -> np.ndarray:
        """log steps/s after isolated observations [(config, steps/s)]: the Gaussian-process
        posterior mean of the log ratio to the prior (kernel: common, same GPU type, same
        setup of GPUs; variances measured on the catalog's leave-one-out residuals). With the
        job's communication times (`communication`), multi-GPU configurations not observed
        are then rebuilt from the posterior 1-GPU throughputs. An observed configuration, and
        its twin (one GPU counts as consolidated or not alike), takes the observed value
        itself before that rebuild, so the multi-GPU configurations of its GPU type start from
        the profiled throughput rather than from the posterior mean the observation noise
        shrinks toward the prior."""
        observed = [(c, math.log(steps) - log_tau[c]) for c, steps in observations if steps > 0]
        if not observed:
            return log_tau
        configs = np.array([c for c, _ in observed])
        residual = np.array([r for _, r in observed])
        everything = np.arange(len(log_tau))
        k_oo = self._tau_kernel(configs, configs) + TAU_JITTER * np.eye(len(configs))
        shifted = log_tau + self._tau_kernel(everything, configs) @ np.linalg.solve(k_oo, residual)
        same_config = ((self.gpu_of_config_[configs][:, None] == self.gpu_of_config_[None, :])
                       & (self.setup_of_config_[configs][:, None] == self.setup_of_config_[None, :]))
        same_config[:, configs] = np.eye(len(configs), dtype=bool)  # an observed twin keeps its own
        for row, (c, r) in zip(same_config, observed):
            shifted[row] = log_tau[c] + r
        if comm is None:
            return shifted
        comm = comm.copy()
        comm[configs] = np.nan  # an observed configuration keeps its Gaussian-process value
        return self.with_communication(shifted, comm)

    def _tau_kernel(self, c1, c2):
        parts, gpu, setup = self.tau_kernel_, self.gpu_of_config_, self.setup_of_config_
        same_setup = setup[c1][:, None] == setup[c2][None, :]
        same_gpu = gpu[c1][:, None] == gpu[c2][None, :]
        return (parts["common"] + parts["gpu_type"] * same_gpu + parts["setup"] * same_setup
                + parts["config"] * (same_gpu & same_setup))

    # ---- leave-one-out residuals: train MAE and the P2 kernel -----------------------------
    def _leave_one_out_residuals(self) -> tuple[np.ndarray, np.ndarray]:
        """Each catalog workload's row predicted from the others (the memory model is the
        catalog's own, so this is a training score): residuals (W, P, G), NaN where unknown,
        and where both the pair fits and it is predicted to, the only cells P2's Gaussian
        process models (a memory-model miss, off by the whole fraction, would otherwise count
        as noise and damp every update)."""
        catalog = self.catalog_
        out = np.full(catalog.rho.shape, np.nan)
        fitting = np.zeros(catalog.rho.shape, dtype=bool)
        for q, features in enumerate(catalog.features):
            rho, _ = self.rho(features, exclude=q)
            keep = np.ones(len(catalog.workloads), dtype=bool)
            keep[q] = False
            out[q][keep] = (catalog.rho[q] - rho)[keep]
            fitting[q][keep] = ((np.nan_to_num(catalog.rho[q]) > 0) & (rho > 0))[keep]
        return out, fitting

    def _leave_one_out_tau(self) -> np.ndarray:
        """Each catalog workload's log steps/s minus its prediction from the others."""
        features = self.catalog_.features
        return np.array([self.log_tau_[q] - self.log_tau(f, exclude=q)[0] for q, f in enumerate(features)])

    # ---- persistence ----------------------------------------------------------------------
    def state(self) -> dict:
        alpha, beta, reference, _ = self.memory_
        return {"alpha": torch.from_numpy(alpha.copy()), "beta": torch.from_numpy(beta.copy()),
                "reference": float(reference), "kernel": dict(self.kernel_), "tau_kernel": dict(self.tau_kernel_),
                "train_mae": self.train_mae_}

    @classmethod
    def from_state(cls, catalog: CatalogData, state: dict) -> "StructuredModel":
        model = cls()
        model.catalog_ = catalog
        model.transfer_weights_ = {}
        with np.errstate(divide="ignore"):
            model.log_tau_ = np.where(catalog.tau > 0, np.log(np.where(catalog.tau > 0, catalog.tau, 1.0)), np.nan)
        model.log_batch_ = np.array([math.log(f.batch_size or 1) for f in catalog.features])
        model.gpu_of_config_ = np.array([catalog.gpu_types.index(c[0]) for c in catalog.configs])
        alpha, beta = state["alpha"].numpy().copy(), state["beta"].numpy().copy()
        model.memory_ = (alpha, beta, state["reference"], _footprints(catalog, alpha, beta, state["reference"]))
        model.relative_flops_ = _relative_flops(catalog, state["reference"])
        model.kernel_ = {k: float(v) for k, v in state["kernel"].items()}
        model.tau_kernel_ = {k: float(v) for k, v in state["tau_kernel"].items()}
        model.setup_of_config_ = _setups(catalog)
        model._set_communication()
        model.train_mae_ = float(state["train_mae"])
        return model


def fit_memory(catalog: CatalogData):
    """alpha, beta (per GPU type), the FLOPs reference and every catalog workload's footprint,
    fitted to which pairs fit (rho > 0) by full-batch Adam from a fixed start: deterministic."""
    flops = np.array([batch_flops(f) or np.nan for f in catalog.features])
    reference = float(np.exp(np.nanmean(np.log(flops)))) if np.isfinite(flops).any() else 1.0
    relative = torch.from_numpy(np.nan_to_num(flops / reference, nan=1.0))
    known = ~np.isnan(catalog.rho)
    fits = torch.from_numpy((catalog.rho > 0).astype(float))
    weight = torch.from_numpy(known.astype(float))
    g = len(catalog.gpu_types)
    alpha = torch.full((g,), 0.2, dtype=torch.float64, requires_grad=True)
    log_beta = torch.full((g,), -3.0, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.Adam([alpha, log_beta], lr=0.05)
    for _ in range(MEMORY_STEPS):
        m = alpha[None, :] + torch.exp(log_beta)[None, :] * relative[:, None]
        logits = MEMORY_SHARPNESS * (1.0 - m[:, None, :] - m[None, :, :])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, fits, weight=weight)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    a, b = alpha.detach().numpy().copy(), np.exp(log_beta.detach().numpy())
    return a, b, reference, _footprints(catalog, a, b, reference)


def _relative_flops(catalog, reference):
    flops = np.array([batch_flops(f) or np.nan for f in catalog.features])
    return np.nan_to_num(flops / reference, nan=1.0)


def _footprints(catalog, alpha, beta, reference):
    return alpha[None, :] + beta[None, :] * _relative_flops(catalog, reference)[:, None]


def residual_kernel(residuals: np.ndarray, families: list[str]) -> dict:
    """Variances of the kernel's parts by the method of moments: the mean product of two
    residuals of one row that share nothing, the GPU type, the partner, or the partner's
    family and the GPU type, differenced; plus the noise (the rest of the variance)."""
    w, p, g = residuals.shape
    fam = np.array(families)
    same_family = fam[:, None] == fam[None, :]
    sums = {"none": [], "gpu": [], "partner": [], "family_gpu": [], "self": []}
    for row in residuals:
        cells = [(i, a, row[i, a]) for i in range(p) for a in range(g) if not np.isnan(row[i, a])]
        if len(cells) < 2:
            continue
        idx_p = np.array([c[0] for c in cells])
        idx_a = np.array([c[1] for c in cells])
        r = np.array([c[2] for c in cells])
        product = np.outer(r, r)
        same_p = idx_p[:, None] == idx_p[None, :]
        same_a = idx_a[:, None] == idx_a[None, :]
        same_f = same_family[np.ix_(idx_p, idx_p)]
        off = ~np.eye(len(r), dtype=bool)
        sums["self"].append(np.diag(product))
        sums["none"].append(product[off & ~same_p & ~same_a & ~same_f])
        sums["gpu"].append(product[off & same_a & ~same_f])
        sums["family_gpu"].append(product[off & same_a & same_f & ~same_p])
        sums["partner"].append(product[off & same_p & ~same_a])
    mean = {k: _mean_or_zero(v) for k, v in sums.items()}
    common = max(mean["none"], 0.0)
    gpu = max(mean["gpu"] - common, 0.0)
    family_gpu = max(mean["family_gpu"] - common - gpu, 0.0)
    partner = max(mean["partner"] - common, 0.0)
    noise = max(mean["self"] - common - gpu - family_gpu - partner, 1e-4)
    return {"common": common, "gpu_type": gpu, "partner": partner, "family_gpu": family_gpu, "noise": noise}


def tau_residual_kernel(residuals: np.ndarray, gpu: np.ndarray, setup: np.ndarray) -> dict:
    """As residual_kernel, for log steps/s over configurations: common, same GPU type, same
    setup (GPUs, consolidated), and the configuration's own part (a 1-GPU configuration,
    consolidated or not, is one configuration: the same throughput)."""
    sums = {"none": [], "gpu": [], "setup": [], "self": []}
    for row in residuals:
        known = np.flatnonzero(~np.isnan(row))
        if len(known) < 2:
            continue
        r = row[known]
        product = np.outer(r, r)
        same_gpu = gpu[known][:, None] == gpu[known][None, :]
        same_setup = setup[known][:, None] == setup[known][None, :]
        sums["self"].append(product[same_gpu & same_setup])
        sums["none"].append(product[~same_gpu & ~same_setup])
        sums["gpu"].append(product[same_gpu & ~same_setup])
        sums["setup"].append(product[same_setup & ~same_gpu])
    mean = {k: _mean_or_zero(v) for k, v in sums.items()}
    common = max(mean["none"], 0.0)
    gpu_part = max(mean["gpu"] - common, 0.0)
    setup_part = max(mean["setup"] - common, 0.0)
    config = max(mean["self"] - common - gpu_part - setup_part, 1e-4)
    return {"common": common, "gpu_type": gpu_part, "setup": setup_part, "config": config}


def _mean_or_zero(parts: list[np.ndarray]) -> float:
    """Mean of the products collected for one relation; 0 when a small catalog has none."""
    values = np.concatenate(parts) if parts else np.empty(0)
    return float(values.mean()) if values.size else 0.0


def _setups(catalog: CatalogData) -> np.ndarray:
    """An index per configuration's (GPUs, consolidated); one GPU is one setup either way."""
    keys = [(n, cons or n == 1) for _, n, cons in catalog.configs]
    names = sorted(set(keys))
    return np.array([names.index(k) for k in keys])


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    if len(values) == 0:
        return math.nan
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def _kernel(p1, a1, p2, a2, families, parts):
    fam = np.array(families)
    same_a = a1[:, None] == a2[None, :]
    same_p = p1[:, None] == p2[None, :]
    same_f = (fam[p1][:, None] == fam[p2][None, :]) & same_a
    return (parts["common"] + parts["gpu_type"] * same_a + parts["partner"] * same_p
            + parts["family_gpu"] * same_f)


def _interpolate(log_batches: np.ndarray, values: np.ndarray, log_batch: float, slope=None):
    """Per cell, the value at `log_batch` from the workloads' values at their batch sizes:
    linear between the nearest known below and above; beyond the range the nearest value,
    or (with `slope` bounds) a line through the two nearest with its slope clipped.
    Returns (value, spread of the neighbours used); NaN where no workload knows the cell."""
    order = np.argsort(log_batches, kind="stable")
    xs, ys = log_batches[order], values[order].reshape(len(order), -1)
    n, cols = ys.shape
    rows = np.arange(n)[:, None]
    known = ~np.isnan(ys)
    below = np.max(np.where(known & (xs[:, None] <= log_batch), rows, -1), axis=0)
    above = np.min(np.where(known & (xs[:, None] >= log_batch), rows, n), axis=0)
    edge = np.where(below >= 0, below, above)  # the nearest known when outside the range
    inner_up = np.min(np.where(known & (rows > edge), rows, n), axis=0)
    inner_down = np.max(np.where(known & (rows < edge), rows, -1), axis=0)
    inner = np.where(above < n, inner_up, inner_down)  # the next one inward

    def take(a, i):
        return np.take_along_axis(a, np.clip(i, 0, n - 1)[None, :], axis=0)[0]

    x_edge, y_edge = xs[np.clip(edge, 0, n - 1)], take(ys, edge)
    x_inner, y_inner = xs[np.clip(inner, 0, n - 1)], take(ys, inner)
    has_inner = (inner >= 0) & (inner < n)
    out = y_edge.copy()
    spread = np.where(has_inner, np.abs(y_edge - y_inner), np.nan)
    if slope is not None:
        with np.errstate(all="ignore"):
            gradient = np.clip((y_edge - y_inner) / (x_edge - x_inner), *slope)
        extrapolate = has_inner & (x_edge != x_inner)
        out = np.where(extrapolate, y_edge + np.nan_to_num(gradient) * (log_batch - x_edge), out)
    inside = (below >= 0) & (above < n)
    x_below, y_below = xs[np.clip(below, 0, n - 1)], take(ys, below)
    x_above, y_above = xs[np.clip(above, 0, n - 1)], take(ys, above)
    with np.errstate(all="ignore"):
        t = np.where(x_above == x_below, 0.0, (log_batch - x_below) / (x_above - x_below))
    out = np.where(inside, (1 - t) * y_below + t * y_above, out)
    spread = np.where(inside, np.abs(y_above - y_below) / 2, spread)
    out = np.where(known.any(axis=0), out, np.nan)
    return out.reshape(values.shape[1:]), spread.reshape(values.shape[1:])
