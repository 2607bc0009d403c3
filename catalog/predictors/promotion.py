"""Throughput check of a candidate predictor against the active one, on the GPU types that changed.

Validation MAE scores co-location only, so a retrain after a few measurements of a new type
could be promoted while predicting that type's throughputs worse than before (one ResNet-18
batch size made the others on that type worse). The check (docs/predictors.md, "Promotion"):

- Held-out rows: on each changed type, the workloads measured alone there are ordered by name
  and every HOLDOUT_STRIDE-th from the second on is held out with all its isolated rows on
  that type (1 GPU and multi-GPU, consolidated or spread): such a workload plays one the type
  has not measured yet, which is what the candidate must predict well.
- Neither version trains on them: each is refitted with its own hyperparameters on its own
  training catalog (the snapshot its state carries) with those rows hidden; a type left with
  no row is dropped from that catalog, as it would be had it never been measured.
- Each refit predicts the held-out rows as a job would be planned: its own estimate where its
  catalog has the configuration, the datasheet carry-over (gpu_specs) for a type it does not
  know, and multi-GPU configurations it lacks scaled from the 1-GPU estimate (scaling).
- Scores: isolated (1 GPU) and multi-GPU MAPE over the rows both can predict. The candidate
  passes when neither is worse than the active's by more than PROMOTION_TOLERANCE.
"""
import numpy as np

from .data import CatalogData
from .errors import UnknownGpuType
from .gpu_specs import estimate_unmeasured
from .scaling import fit_scaling, multi_gpu_tau

#: Every HOLDOUT_STRIDE-th workload of a changed type (from the second) is held out.
HOLDOUT_STRIDE = 3
#: How much worse (absolute MAPE, a fraction) a candidate may score and still be promoted:
#: a refit's own jitter (networks) and rounding, not a real loss.
PROMOTION_TOLERANCE = 0.01
PARTS = ("isolated_mape", "multi_gpu_mape")


def held_out(catalog: CatalogData, gpu_types) -> dict[str, list[str]]:
    """Per changed type, the workloads whose isolated rows there are held out (sorted names)."""
    out = {}
    for gpu_type in sorted(set(gpu_types) & set(catalog.gpu_types)):
        columns = [c for c, config in enumerate(catalog.configs) if config[0] == gpu_type]
        measured = sorted(w for i, w in enumerate(catalog.workloads) if np.isfinite(catalog.tau[i, columns]).any())
        if measured[1::HOLDOUT_STRIDE]:
            out[gpu_type] = measured[1::HOLDOUT_STRIDE]
    return out


def hide(catalog: CatalogData, rows: dict[str, list[str]]) -> CatalogData:
    """The catalog with the held-out rows unknown, and the types and configurations left with
    no row removed (as build_catalog would never have listed them)."""
    tau = catalog.tau.copy()
    for gpu_type, workloads in rows.items():
        columns = [c for c, config in enumerate(catalog.configs) if config[0] == gpu_type]
        for w in workloads:
            if w in catalog.workloads:
                tau[catalog.workloads.index(w), columns] = np.nan
    types = [a for a in catalog.gpu_types
             if np.isfinite(tau[:, [c for c, config in enumerate(catalog.configs) if config[0] == a]]).any()]
    keep = [c for c, config in enumerate(catalog.configs)
            if config[0] in types and (config[1] == 1 and config[2] or np.isfinite(tau[:, c]).any())]
    g = [catalog.gpu_types.index(a) for a in types]
    return CatalogData(catalog.workloads, catalog.features, types, [catalog.configs[c] for c in keep],
                       tau[:, keep], catalog.rho[:, :, g], catalog.samples[:, :, g],
                       {k: v for k, v in catalog.power.items() if k[1] in types})


def predicted_rows(model, truth: CatalogData, rows: dict[str, list[str]]) -> dict[tuple, float]:
    """{(workload, gpu_type, GPUs, consolidated): steps/s} the fitted `model` predicts for the
    held-out rows truth knows, as a job would be planned (module docstring)."""
    fit = fit_scaling(model.catalog_)
    out = {}
    for gpu_type, workloads in rows.items():
        for name in workloads:
            w = truth.workloads.index(name)
            features = truth.features[w]
            prediction = model.predict(features)
            if gpu_type in prediction.gpu_types:
                tau_1 = prediction.isolated(gpu_type)
            else:
                try:
                    tau_1 = estimate_unmeasured(prediction, features, gpu_type).tau
                except (UnknownGpuType, ValueError):
                    continue  # no specs: this version cannot plan the type at all
            for c, (a, n, cons) in enumerate(truth.configs):
                if a != gpu_type or not truth.tau[w, c] > 0 or (n == 1 and not cons):
                    continue
                if (a, n, cons) in prediction.configs:
                    value = prediction.isolated(a, n, cons)
                else:
                    value = multi_gpu_tau(tau_1, fit, features, a, n, cons)
                if value is not None:
                    out[(name, a, n, cons)] = float(value)
    return out


def scores(predicted: dict[tuple, float], truth: CatalogData, keys) -> dict[str, float | None]:
    """Isolated (1 GPU) and multi-GPU MAPE over `keys`; None where there is none."""
    errors = {part: [] for part in PARTS}
    for key in keys:
        name, a, n, cons = key
        true = truth.tau[truth.workloads.index(name), truth.configs.index((a, n, cons))]
        errors[PARTS[n > 1]].append(abs(predicted[key] - true) / true)
    return {part: round(float(np.mean(v)), 4) if v else None for part, v in errors.items()}


def throughput_check(candidate, active, truth: CatalogData, gpu_types, refit) -> dict:
    """Both versions' held-out throughput scores on `gpu_types` (types the truth lacks are
    ignored). `refit(model, catalog)` fits a fresh model of `model`'s kind on `catalog`."""
    rows = held_out(truth, gpu_types)
    predicted = {label: predicted_rows(refit(model, hide(model.catalog_, rows)), truth, rows) if rows else {}
                 for label, model in (("candidate", candidate), ("active", active))}
    common = sorted(set(predicted["candidate"]) & set(predicted["active"]))
    return {
        "gpu_types": sorted(set(gpu_types) & set(truth.gpu_types)), "held_out": rows, "rows": len(common),
        "candidate": scores(predicted["candidate"], truth, common),
        "active": scores(predicted["active"], truth, common),
        "tolerance": PROMOTION_TOLERANCE,
    }


def refusal(check: dict) -> str | None:
    """Why the candidate is worse on throughput (both scores), or None when it is not."""
    worse = [f"{part.replace('_', ' ')} {check['candidate'][part]:.1%} vs the active's {check['active'][part]:.1%}"
             for part in PARTS
             if check["candidate"][part] is not None and check["active"][part] is not None
             and check["candidate"][part] > check["active"][part] + check["tolerance"]]
    if not worse:
        return None
    rows = f"{check['rows']} row{'s' if check['rows'] != 1 else ''}"
    return (f"held-out throughput on {', '.join(check['gpu_types'])} ({rows}) is worse: "
            f"{'; '.join(worse)} (tolerance {check['tolerance']:.0%})")
