"""Multi-GPU throughput on GPU types without multi-GPU measurements, from their 1-GPU estimate.

A data-parallel step on k GPUs is a 1-GPU step plus communication (the structured predictor's
view, docs/predictors.md): the k GPUs together run k / (1 / tau_1 + c) steps/s, where c is the
seconds a step spends in the all-reduce and waiting. c is fitted, per family, number of GPUs and
consolidated/spread, as the median of what the catalog's measured multi-GPU rows show (on the
reference data: K80, P100, V100). Within one server the gradients cross the type's own links,
so a consolidated c is scaled by (B_measured / B_type) ** INTERCONNECT_EXPONENT (B: per-GPU
interconnect bandwidth, INTERCONNECT); spread across servers it crosses the cluster's network,
which does not depend on the GPU, so a spread c is carried over as it is. A family with no
multi-GPU rows gets the other families' communication time per parameter times its own
parameter count (the gradient bytes of a step grow with the parameters).

The exponent is fitted on the reference data (hold one type's multi-GPU rows out, predict them
from its measured 1-GPU rows, `holdout_errors`): 0.3 gave the lowest mean error over the three
types (docs/predictors.md, "Multi-GPU on unmeasured types"). The data does not support the
full bandwidth law (exponent 1: NVLink's V100 would then communicate 19x faster than the K80,
and the measured rows show nothing like it), so the interconnect moves c only weakly.

Uncertainty grows with k: a k-GPU estimate's log-space standard deviation is the 1-GPU one
combined with SCALING_LOG_SD per doubling of GPUs (log2 k), measured on the same held-out rows.
"""
import math
from dataclasses import dataclass

import numpy as np

from .data import CatalogData


@dataclass(frozen=True, slots=True)
class Interconnect:
    """How a type's GPUs in one server exchange gradients: per-GPU bandwidth, one direction."""

    gbs: float
    link: str
    source: str


#: Per GPU, one direction, the variants catalog/gpu_type_defaults.py describes.
INTERCONNECT: dict[str, Interconnect] = {
    "k80": Interconnect(8.0, "PCIe 3.0", "NVIDIA Tesla K80 datasheet: PCIe Gen3 x16 per board of two GPUs "
                                         "(15.75 GB/s per direction, shared)"),
    "p100": Interconnect(16.0, "PCIe 3.0", "NVIDIA Tesla P100 PCIe datasheet: PCIe Gen3 x16, 32 GB/s bidirectional"),
    "v100": Interconnect(150.0, "NVLink 2", "NVIDIA Tesla V100 SXM2 datasheet: NVLink 300 GB/s bidirectional"),
    "t4": Interconnect(16.0, "PCIe 3.0", "NVIDIA T4 datasheet: PCIe Gen3 x16, 32 GB/s bidirectional"),
    "l4": Interconnect(32.0, "PCIe 4.0", "NVIDIA L4 datasheet: PCIe Gen4 x16, 64 GB/s bidirectional"),
    "a10": Interconnect(32.0, "PCIe 4.0", "NVIDIA A10 datasheet: PCIe Gen4 x16, 64 GB/s bidirectional"),
    "l40s": Interconnect(32.0, "PCIe 4.0", "NVIDIA L40S datasheet: PCIe Gen4 x16, 64 GB/s bidirectional"),
    "a100": Interconnect(300.0, "NVLink 3", "NVIDIA A100 SXM4 datasheet: NVLink 600 GB/s bidirectional"),
    "h100": Interconnect(450.0, "NVLink 4", "NVIDIA H100 SXM5 datasheet: NVLink 900 GB/s bidirectional"),
    "h200": Interconnect(450.0, "NVLink 4", "NVIDIA H200 SXM datasheet: NVLink 900 GB/s bidirectional"),
}
#: How strongly a consolidated communication time follows the interconnect (fitted, see above).
INTERCONNECT_EXPONENT = 0.3
#: Bandwidth assumed for a type missing from INTERCONNECT: PCIe 3.0 x16, the slowest listed.
DEFAULT_INTERCONNECT_GBS = 16.0
#: Log-space standard deviation a k-GPU estimate adds per doubling of GPUs (measured, see above).
SCALING_LOG_SD = 0.2


@dataclass(frozen=True)
class ScalingFit:
    """Communication seconds per step, per (family, GPUs, consolidated), normalised to a
    bandwidth of 1 GB/s for consolidated setups; and per parameter, for families without rows."""

    seconds: dict[tuple[str, int, bool], float]
    per_parameter: dict[tuple[int, bool], float]
    setups: tuple[tuple[int, bool], ...]


def bandwidth(gpu_type: str, interconnect: dict[str, Interconnect] = INTERCONNECT) -> float:
    known = interconnect.get(gpu_type)
    return known.gbs if known else DEFAULT_INTERCONNECT_GBS


def fit_scaling(catalog: CatalogData, exclude_types=(), interconnect: dict[str, Interconnect] = INTERCONNECT
                ) -> ScalingFit:
    """The communication times the catalog's multi-GPU rows show (types in `exclude_types` left out)."""
    samples: dict[tuple[str, int, bool], list[float]] = {}
    for c, (gpu_type, n, cons) in enumerate(catalog.configs):
        if n == 1 or gpu_type in exclude_types or (gpu_type, 1, True) not in catalog.configs:
            continue
        single = catalog.configs.index((gpu_type, 1, True))
        scale = bandwidth(gpu_type, interconnect) ** INTERCONNECT_EXPONENT if cons else 1.0
        for w, family in enumerate(catalog.families):
            tau_1, tau_k = catalog.tau[w, single], catalog.tau[w, c]
            if tau_1 > 0 and tau_k > 0:
                samples.setdefault((family, n, cons), []).append(max(n / tau_k - 1 / tau_1, 0.0) * scale)
    seconds = {key: float(np.median(v)) for key, v in samples.items()}
    parameters = {f.family: f.parameters for f in catalog.features if f.parameters}
    per_parameter = {}
    for n, cons in {(n, cons) for _, n, cons in seconds}:
        ratios = [s / parameters[f] for (f, k, c), s in seconds.items() if (k, c) == (n, cons) and f in parameters]
        if ratios:
            per_parameter[(n, cons)] = float(np.median(ratios))
    setups = tuple(sorted({(n, cons) for _, n, cons in catalog.configs if n > 1}))
    return ScalingFit(seconds, per_parameter, setups)


def communication(fit: ScalingFit, features, gpu_type: str, num_gpus: int, consolidated: bool,
                  interconnect: dict[str, Interconnect] = INTERCONNECT) -> float | None:
    """Seconds per step k GPUs of `gpu_type` add to the 1-GPU step; None when nothing is known."""
    key = (num_gpus, consolidated)
    value = fit.seconds.get((features.family, *key))
    if value is None and features.parameters and key in fit.per_parameter:
        value = fit.per_parameter[key] * features.parameters
    if value is None:
        return None
    return value / bandwidth(gpu_type, interconnect) ** INTERCONNECT_EXPONENT if consolidated else value


def multi_gpu_tau(tau_1: float, fit: ScalingFit, features, gpu_type: str, num_gpus: int, consolidated: bool,
                  interconnect: dict[str, Interconnect] = INTERCONNECT) -> float | None:
    """Steps/s of `num_gpus` GPUs together (as the catalog counts them) from the 1-GPU estimate;
    0 when the job does not fit on one GPU; None when no communication time is known."""
    if num_gpus == 1 or tau_1 <= 0:
        return tau_1 if num_gpus == 1 or tau_1 == 0 else None
    comm = communication(fit, features, gpu_type, num_gpus, consolidated, interconnect)
    return None if comm is None else num_gpus / (1.0 / tau_1 + comm)


def multi_gpu_log_sd(tau_1_log_sd: float, num_gpus: int) -> float:
    """The k-GPU estimate's log-space standard deviation: wider with every doubling of GPUs."""
    return math.hypot(tau_1_log_sd, SCALING_LOG_SD * math.log2(num_gpus))


def holdout_errors(catalog: CatalogData, gpu_type: str,
                   interconnect: dict[str, Interconnect] = INTERCONNECT) -> dict[str, float | int | None]:
    """The benchmark: `gpu_type`'s multi-GPU rows hidden, predicted from its measured 1-GPU rows
    and the other types' communication times. MAPE (a fraction) consolidated, spread and both,
    the rows scored, and the log-space standard deviation of the errors per doubling of GPUs."""
    fit = fit_scaling(catalog, exclude_types=(gpu_type,), interconnect=interconnect)
    single = catalog.configs.index((gpu_type, 1, True))
    errors = {True: [], False: []}
    log_per_doubling = []
    for c, (a, n, cons) in enumerate(catalog.configs):
        if a != gpu_type or n == 1:
            continue
        for w, features in enumerate(catalog.features):
            truth = catalog.tau[w, c]
            if not truth > 0:
                continue
            predicted = multi_gpu_tau(float(catalog.tau[w, single]), fit, features, a, n, cons, interconnect)
            if predicted:
                errors[cons].append(abs(predicted - truth) / truth)
                log_per_doubling.append(math.log(predicted / truth) / math.log2(n))
    both = errors[True] + errors[False]

    def mape(values):
        return round(float(np.mean(values)), 4) if values else None

    return {"mape": mape(both), "consolidated_mape": mape(errors[True]), "spread_mape": mape(errors[False]),
            "rows": len(both),
            "log_sd_per_doubling": round(float(np.sqrt(np.mean(np.square(log_per_doubling)))), 4)
            if log_per_doubling else None}


def multi_gpu_holdout(catalog: CatalogData) -> dict[str, dict[str, float | int | None]]:
    """bench_predictors' `p1.multi_gpu_unmeasured.<type>.{mape, ...}`: holdout_errors of every
    type with multi-GPU rows."""
    return {
        gpu_type: holdout_errors(catalog, gpu_type)
        for gpu_type in catalog.gpu_types
        if any(a == gpu_type and n > 1 for a, n, _ in catalog.configs)
    }


def format_multi_gpu(report: dict[str, dict[str, float | int | None]]) -> str:
    """The table bench_predictors prints: one row per type whose multi-GPU rows were hidden."""
    def pct(value):
        return "-" if value is None else f"{100 * value:.1f} %"

    lines = ["Multi-GPU on a type without multi-GPU measurements (its 1-GPU rows + scaling.py), MAPE:",
             f"{'type':<8}{'rows':>6}{'all':>10}{'consolidated':>14}{'spread':>10}"]
    for gpu_type, row in report.items():
        lines.append(f"{gpu_type:<8}{row.get('rows', 0):>6}{pct(row.get('mape')):>10}"
                     f"{pct(row.get('consolidated_mape')):>14}{pct(row.get('spread_mape')):>10}")
    return "\n".join(lines) + "\n"
