"""The "unseen GPU type" protocol of the predictor benchmark (docs/predictors.md, "Unseen GPU types").

Each GPU type u of the data is held out in turn: every measurement on u is hidden, the
structured predictor is fitted on the rest, and every workload is scored on u's 1-GPU
isolated throughput (MAPE), two ways:

- zero-shot: u is a type nobody measured; its estimate is `gpu_specs.estimate_unmeasured`
  (datasheets), the path production takes for a type without measurements;
- suite: u's 1-GPU measurements of the suite's cases (SUITE_CASES: the workloads the
  profiling suite runs that the data holds) come back, the predictor is refitted, and its
  prediction on u is read (structured.py's transfer: the suite's speed ratios).

Both are scored on the same workloads: those that are not suite cases ("every other
workload"), so the two numbers compare. The curve repeats the suite score with the first 1,
2, 4 and 7 cases only (SUITE_CASES' order puts one case per family first: 7 is one per
family).
"""
import math

import numpy as np

from .data import build_catalog
from .estimator import PerformancePredictor
from .gpu_specs import GPU_DATASHEETS, estimate_unmeasured

#: The profiling suite's 1-GPU cases of the reference families (catalog/profiling/cases.py,
#: SINGLE_GPU_WORKLOADS, less the new families the reference data lacks), reordered: each
#: family's middle batch size first, then the smallest, then the largest, so a prefix of the
#: list covers as many families as it can (the order the error curve adds cases in).
SUITE_CASES = (
    "ResNet-18 (batch size 128)", "ResNet-50 (batch size 64)", "Transformer (batch size 128)",
    "LM (batch size 20)", "Recommendation (batch size 2048)", "A3C", "CycleGAN",
    "ResNet-18 (batch size 32)", "ResNet-50 (batch size 16)", "Transformer (batch size 32)",
    "LM (batch size 5)", "Recommendation (batch size 512)",
    "ResNet-18 (batch size 256)", "ResNet-50 (batch size 128)", "Transformer (batch size 256)",
    "LM (batch size 80)", "Recommendation (batch size 8192)",
)
#: Numbers of suite cases measured on the held-out type, for the error curve.
CURVE_COUNTS = (1, 2, 4, 7)


def run_unseen(records, quick: bool = False, suite_cases=SUITE_CASES, specs=GPU_DATASHEETS, log=print) -> dict:
    """{gpu type: {zero_shot_mape, suite_mape, suite_cases, scored_workloads, curve}} for every
    GPU type of `records` (measurement records) that has a datasheet and is measured alone on
    one GPU; `quick` skips the curve."""
    full = build_catalog(records)
    out = {}
    if len(full.gpu_types) < 2:  # nothing left to carry over from
        return out
    for held in full.gpu_types:
        if held not in specs:
            log(f"unseen GPU type {held}: no datasheet, skipped")
            continue
        cases = [w for w in suite_cases if _measured(full, w, held)]
        scored = [w for w in full.workloads if w not in cases and _measured(full, w, held)
                  and any(_measured(full, w, a) for a in full.gpu_types if a != held)]
        if not scored:
            continue
        others = [r for r in records if r.gpu_type != held]
        zero = _zero_shot(build_catalog(others), full, held, scored, specs)
        counts = [] if quick else [k for k in CURVE_COUNTS if k < len(cases)]
        curve = {str(k): _suite(others, records, held, cases[:k], full, scored) for k in counts}
        out[held] = {
            "zero_shot_mape": _round(zero),
            "suite_mape": _round(_suite(others, records, held, cases, full, scored)),
            "suite_cases": len(cases),
            "scored_workloads": len(scored),
            "curve": {k: _round(v) for k, v in curve.items()},
        }
        log(f"unseen GPU type {held}: zero-shot {zero:.1%}, suite {out[held]['suite_mape']:.1%}")
    return out


def _measured(catalog, workload, gpu_type) -> bool:
    """The workload runs alone on one GPU of the type (a value > 0: it fits)."""
    if workload not in catalog.workloads:
        return False
    value = catalog.tau[catalog.workloads.index(workload), catalog.configs.index((gpu_type, 1, True))]
    return bool(value > 0)


def _truth(full, workload, gpu_type) -> float:
    return float(full.tau[full.workloads.index(workload), full.configs.index((gpu_type, 1, True))])


def _zero_shot(train, full, held, scored, specs) -> float:
    model = PerformancePredictor(architecture="structured").fit(train)
    errors = []
    for workload in scored:
        features = full.features[full.workloads.index(workload)]
        estimate = estimate_unmeasured(model.predict(features), features, held, specs=specs)
        errors.append(_ape(estimate.tau, _truth(full, workload, held)))
    return float(np.mean(errors))


def _suite(others, records, held, cases, full, scored) -> float:
    """MAPE on `scored` after u's 1-GPU alone measurements of `cases` are back in the data."""
    back = [r for r in records if r.gpu_type == held and r.workload in cases and r.partner is None
            and r.num_gpus == 1 and r.consolidated]
    model = PerformancePredictor(architecture="structured").fit(build_catalog(others + back))
    errors = [_ape(model.predict(full.features[full.workloads.index(w)]).isolated(held), _truth(full, w, held))
              for w in scored]
    return float(np.mean(errors))


def _ape(prediction: float, truth: float) -> float:
    return abs(prediction - truth) / truth


def _round(value):
    return None if value is None or not math.isfinite(value) else round(float(value), 4)


def format_unseen(section: dict) -> str:
    """The table `bench_predictors` prints for the protocol."""
    counts = sorted({k for row in section.values() for k in row["curve"]}, key=int)
    lines = ["Unseen GPU type (1-GPU isolated throughput MAPE on the workloads outside the suite)",
             f"{'held out':<10} {'zero-shot':>10} {'suite':>8} {'cases':>6} {'scored':>7} "
             + " ".join(f"{k + ' case' + ('s' if k != '1' else ''):>9}" for k in counts)]
    for gpu_type, row in section.items():
        lines.append(f"{gpu_type:<10} {_pct(row['zero_shot_mape']):>10} {_pct(row['suite_mape']):>8} "
                     f"{row['suite_cases']:>6} {row['scored_workloads']:>7} "
                     + " ".join(f"{_pct(row['curve'].get(k)):>9}" for k in counts))
    return "\n".join(lines)


def _pct(value):
    return "-" if value is None else f"{value:.1%}"
