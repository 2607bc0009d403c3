"""The predictor benchmark: leave-one-workload-out, leave-one-family-out, P2 curves, latency.

Every fold hides all records involving the held-out workloads (on either side of a pair)
before anything is fitted, baselines included; nothing is tuned on a validation fold. Rho
is scored on the held-out workload's row (its throughput next to each partner, partner !=
itself, on each GPU type), tau (isolated throughput) on every configuration where it fits.

P2 observations come in the order a scheduler makes them: the job lands on the GPU types in
turn (a seeded order), is profiled alone the first time it meets a type (an isolated
throughput observation), and is co-located with a seeded random sequence of partners; the
k-th observation is the k-th co-location. Scores count only cells not yet observed.
"""
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .baselines import BASELINES
from .data import CatalogData
from .ensemble import EnsemblePredictor
from .estimator import ARCHITECTURES, Observation, PerformancePredictor

P2_COUNTS = (0, 1, 2, 3, 5, 10)


@dataclass(frozen=True)
class BenchSettings:
    quick: bool = False
    seed: int = 0
    architectures: tuple = ARCHITECTURES

    def model(self, architecture: str) -> PerformancePredictor:
        if self.quick:
            return PerformancePredictor(architecture=architecture, epochs=2, draws=1, hidden=16, cells_per_episode=8,
                                        seed=self.seed)
        return PerformancePredictor(architecture=architecture, seed=self.seed)


def run_benchmark(catalog: CatalogData, settings: BenchSettings = BenchSettings(), log=print) -> dict:
    torch.set_num_threads(1)
    ensemble = ("ensemble",) if len(settings.architectures) > 1 else ()
    rows = list(settings.architectures) + list(ensemble) + list(BASELINES)
    lowo = [[w] for w in catalog.workloads]
    families = sorted(set(catalog.families))
    lofo = [[w for w, f in zip(catalog.workloads, catalog.families) if f == fam] for fam in families]
    if settings.quick:
        lowo, lofo = lowo[::9], lofo[::3]
    started = time.perf_counter()
    scores = {split: {name: [] for name in rows} for split in ("lowo", "lofo", "p2")}
    for split, folds in (("lowo", lowo), ("lofo", lofo)):
        for fold, held in enumerate(folds):
            train = catalog.without(held)
            models = {name: _fit(name, train, settings) for name in settings.architectures + tuple(BASELINES)}
            if ensemble:
                models["ensemble"] = EnsemblePredictor([models[a] for a in settings.architectures])
            for name in rows:
                scores[split][name].append(score_p1(models[name], catalog, held))
                if split == "lowo":
                    scores["p2"][name].append(_p2_curve(models[name], catalog, held[0], settings.seed + fold))
            log(f"{split} fold {fold + 1}/{len(folds)} ({', '.join(held)[:60]}): {time.perf_counter() - started:.0f} s")
    report = {
        "p1": {
            "leave_one_workload_out": {name: _aggregate(scores["lowo"][name]) for name in rows},
            "leave_one_family_out": {name: _aggregate(scores["lofo"][name]) for name in rows},
        },
        "p2": {"curve": {name: _aggregate_curves(scores["p2"][name]) for name in rows}},
        "latency_ms": _latency(catalog, settings),
    }
    report["settings"] = {"quick": settings.quick, "seed": settings.seed, "workloads": len(catalog.workloads),
                          "lowo_folds": len(lowo), "lofo_folds": len(lofo),
                          "hyperparameters": settings.model(settings.architectures[0]).get_params()
                          if settings.architectures else {},
                          "seconds": round(time.perf_counter() - started, 1)}
    return report


def _fit(name, catalog, settings):
    if name in BASELINES:
        return BASELINES[name]().fit(catalog)
    return settings.model(name).fit(catalog)


def _job(model, features):
    """A job whose estimates follow observations one at a time, for networks and baselines alike."""
    if isinstance(model, (PerformancePredictor, EnsemblePredictor)):
        return model.job(features)
    return _BaselineJob(model, features)


class _BaselineJob:
    """Baselines have no online state: they re-estimate from all observations so far."""

    def __init__(self, model, features):
        self.model, self.features, self.rho_obs, self.tau_obs = model, features, [], []

    def observe(self, observation):
        (self.tau_obs if observation.partner is None else self.rho_obs).append(observation)

    def estimate(self):
        catalog = self.model.catalog_
        tau_pairs = [(catalog.configs.index((o.gpu_type, 1, True)), o.throughput) for o in self.tau_obs]
        alone = {o.gpu_type: o.throughput for o in self.tau_obs}
        triples = [(catalog.workloads.index(o.partner), catalog.gpu_types.index(o.gpu_type),
                    min(1.0, o.throughput / alone[o.gpu_type]), math.nan) for o in self.rho_obs]
        return self.model.predict_rho(self.features, triples), self.model.predict_tau(self.features, tau_pairs)


def _estimate(job):
    if isinstance(job, _BaselineJob):
        return job.estimate()
    prediction = job.prediction()
    return prediction.rho, prediction.tau


def _row_truth(catalog, train, workload):
    q = catalog.workloads.index(workload)
    partners = [catalog.workloads.index(p) for p in train.workloads]
    return catalog.rho[q, partners], catalog.tau[q]


def score_p1(model, catalog, held):
    """P1 scores of a model fitted without `held`: rho MAE on their rows, tau MAPE zero- and one-shot.

    The model's catalog may be another cluster's (an imported version): partners, GPU types and
    configurations are matched by name and only the cells both know are scored. A score with
    nothing to score (no co-location record, so no rho truth) is None, never NaN."""
    partners, gpus, configs = _shared_cells(model.catalog_, catalog)
    shared_types = [a for a in catalog.gpu_types if a in model.catalog_.gpu_types]
    rho_err, zero, one = [], [], []
    for workload in held:
        q = catalog.workloads.index(workload)
        features = catalog.features[q]
        rho_truth, tau_truth = catalog.rho[q][np.ix_(partners[1], gpus[1])], catalog.tau[q, configs[1]]
        rho, tau = _estimate(_job(model, features))
        rho_err.append(np.abs(rho[np.ix_(partners[0], gpus[0])] - rho_truth)[~np.isnan(rho_truth)])
        fits = tau_truth > 0
        zero.append(_ape(tau[configs[0]], tau_truth, fits))
        for a in shared_types:
            c = configs[1].index(catalog.configs.index((a, 1, True)))
            if tau_truth[c] > 0:
                job = _job(model, features)
                job.observe(Observation(a, float(tau_truth[c])))
                _, tau = _estimate(job)
                mask = fits.copy()
                mask[c] = False
                one.append(_ape(tau[configs[0]], tau_truth, mask))
    scores = {"val_mae": _mean_or_none(rho_err),
              "iso_mape": {"zero_shot": _mean_or_none(zero), "one_shot": _mean_or_none(one)}}
    train_mae = model.train_mae_ if hasattr(model, "train_mae_") else _in_sample_mae(model)
    scores["train_mae"] = train_mae if train_mae is not None and math.isfinite(train_mae) else None
    return scores


def _shared_cells(train, catalog):
    """Index lists [train side, catalog side] of the partners, GPU types and configurations
    that both catalogs hold, in the scored catalog's order (all of them in the benchmark,
    whose folds share GPU types and configurations)."""
    partners = [p for p in train.workloads if p in catalog.workloads]
    gpus = [a for a in catalog.gpu_types if a in train.gpu_types]
    configs = [c for c in catalog.configs if c in train.configs]
    return ([[train.workloads.index(p) for p in partners], [catalog.workloads.index(p) for p in partners]],
            [[train.gpu_types.index(a) for a in gpus], [catalog.gpu_types.index(a) for a in gpus]],
            [[train.configs.index(c) for c in configs], [catalog.configs.index(c) for c in configs]])


def _mean_or_none(parts):
    """Mean of the concatenated errors; None when there is none (nothing to score)."""
    values = np.concatenate(parts) if parts else np.empty(0)
    return float(np.mean(values)) if values.size else None


def _in_sample_mae(model):
    """Baselines: MAE on the catalog's own rows, each workload predicted from the others."""
    catalog = model.catalog_
    errors = []
    for i, workload in enumerate(catalog.workloads):
        inner = type(model)().fit(catalog.without([workload]))
        truth = catalog.rho[i, [catalog.workloads.index(p) for p in inner.catalog_.workloads]]
        errors.append(np.abs(inner.predict_rho(catalog.features[i]) - truth)[~np.isnan(truth)])
    return _mean_or_none(errors)


def _ape(prediction, truth, mask):
    return np.abs(prediction[mask] - truth[mask]) / truth[mask]


def _p2_curve(model, catalog, workload, seed):
    """Rho MAE and tau MAPE over unobserved cells after each count in P2_COUNTS."""
    rng = np.random.default_rng(seed)
    train = model.catalog_
    features = catalog.features[catalog.workloads.index(workload)]
    rho_truth, tau_truth = _row_truth(catalog, train, workload)
    gpu_order = [train.gpu_types[i] for i in rng.permutation(len(train.gpu_types))]
    partners = [train.workloads[i] for i in rng.permutation(len(train.workloads))]
    sequence, seen_types = [], set()
    for k, partner in enumerate(partners[: max(P2_COUNTS)]):
        a = gpu_order[k % len(gpu_order)]
        p, g = train.workloads.index(partner), train.gpu_types.index(a)
        c = catalog.configs.index((a, 1, True))
        if np.isnan(rho_truth[p, g]) or not tau_truth[c] > 0:
            continue
        alone = float(tau_truth[c])
        sequence.append((Observation(a, alone) if a not in seen_types else None,
                         Observation(a, float(rho_truth[p, g]) * alone, partner=partner), (p, g), c))
        seen_types.add(a)
    job, curve, done = _job(model, features), {}, 0
    for count in P2_COUNTS:
        for isolated, colocated, _, _ in sequence[done:count]:
            if isolated is not None:
                job.observe(isolated)
            job.observe(colocated)
        done = count
        rho, tau = _estimate(job)
        rho_mask = ~np.isnan(rho_truth)
        tau_mask = tau_truth > 0
        for _, _, (p, g), c in sequence[:count]:
            rho_mask[p, g] = False
            tau_mask[c] = False
        curve[str(count)] = (np.abs(rho - rho_truth)[rho_mask], _ape(tau, tau_truth, tau_mask))
    return curve


def _aggregate(scores):
    """Mean over folds, keeping the nesting of the per-fold scores."""
    def mean(values):
        if isinstance(values[0], dict):
            return {key: mean([v[key] for v in values]) for key in values[0]}
        known = [v for v in values if v is not None]  # None: nothing to score in that fold
        return round(float(np.mean(known)), 4) if known else None

    return mean(scores)


def _aggregate_curves(curves):
    out = {}
    for count in map(str, P2_COUNTS):
        rho = np.concatenate([c[count][0] for c in curves])
        tau = np.concatenate([c[count][1] for c in curves])
        out[count] = {"rho_mae": _mean(rho), "tau_mape": _mean(tau)}
    return out


def _mean(values):
    """Rounded mean; None when nothing was left to score (small data, everything observed)."""
    return round(float(values.mean()), 4) if len(values) else None


def _latency(catalog, settings):
    """P1 inference for one new job (every GPU type and partner; a 200-GPU cluster of the
    catalog's types asks no more than that) and one P2 update, median of repeated runs."""
    out = {"p1": {}, "p2_update": {}}
    held = catalog.workloads[len(catalog.workloads) // 2]
    features = catalog.features[catalog.workloads.index(held)]
    train = catalog.without([held])
    partner, gpu = train.workloads[0], train.gpu_types[-1]
    for name in settings.architectures:
        model = settings.model(name).fit(train)
        p1 = []
        for _ in range(20):
            t = time.perf_counter()
            model.predict(features)
            p1.append(time.perf_counter() - t)
        p2 = []
        for _ in range(20):
            job = model.job(features)
            t = time.perf_counter()
            job.observe(Observation(gpu, 1.0, partner=partner, partner_throughput=1.0))
            p2.append(time.perf_counter() - t)
        out["p1"][name] = round(1e3 * float(np.median(p1)), 2)
        out["p2_update"][name] = round(1e3 * float(np.median(p2)), 2)
    return out


def _cell(value, spec):
    return "-" if value is None else format(value, spec)


def format_table(report: dict) -> str:
    """The human table the command prints and the README carries."""
    lines = ["P1 (rho MAE; isolated throughput MAPE)",
             f"{'model':<18} {'LOWO train':>10} {'LOWO val':>9} {'LOFO val':>9} {'iso 0-shot':>10} {'iso 1-shot':>10} "
             f"{'LOFO iso 0':>10} {'LOFO iso 1':>10}"]
    lowo, lofo = report["p1"]["leave_one_workload_out"], report["p1"]["leave_one_family_out"]
    for name, s in lowo.items():
        f = lofo[name]
        lines.append(f"{name:<18} {_cell(s['train_mae'], '.4f'):>10} {_cell(s['val_mae'], '.4f'):>9} "
                     f"{_cell(f['val_mae'], '.4f'):>9} {_cell(s['iso_mape']['zero_shot'], '.1%'):>10} "
                     f"{_cell(s['iso_mape']['one_shot'], '.1%'):>10} {_cell(f['iso_mape']['zero_shot'], '.1%'):>10} "
                     f"{_cell(f['iso_mape']['one_shot'], '.1%'):>10}")
    lines += ["", "P2 (leave-one-workload-out; rho MAE / tau MAPE on unobserved cells after k observations)",
              f"{'model':<18} " + " ".join(f"{'k=' + c:>14}" for c in map(str, P2_COUNTS))]
    for name, curve in report["p2"]["curve"].items():
        lines.append(f"{name:<18} " + " ".join(f"{_cell(curve[c]['rho_mae'], '.4f'):>7}/"
                                               f"{_cell(curve[c]['tau_mape'], '.1%'):>6}" for c in map(str, P2_COUNTS)))
    if any(s["val_mae"] is None for s in lowo.values()):
        lines.append("-: nothing to score (rho: no co-location data)")
    lat = report["latency_ms"]
    lines += ["", "latency (ms): " + ", ".join(f"{n} P1 {lat['p1'][n]} / P2 update {lat['p2_update'][n]}"
                                                for n in lat["p1"])]
    return "\n".join(lines)
