"""Estimates for GPU types the catalog has no measurements on, from their datasheet specs.

A job's throughput on an unmeasured type u is carried over from each measured type a by a
roofline-style mix: the compute-bound share of a step (the workload's compute density, c)
scales with FP32 throughput, the rest with memory bandwidth,

    log tau(w, u) = log tau(w, a) + c log(F_u / F_a) + (1 - c) log(B_u / B_a),

and the carried-over values are averaged in log space over the measured types, weighted by
closeness (`closeness_weights`: near in datasheet space and in architecture generation; a
plain mean let a K80 drag a modern type's estimate toward Kepler's behaviour). Their
weighted spread, plus UNMEASURED_LOG_SD, is the uncertainty. FP32 because the reference
workloads train in FP32 (Gavel's implementations use no mixed precision); tensor cores and
TF32 would make newer GPUs faster than this says for jobs that use them. rho on u is the mean
of the job's rho on the measured types where the pair fits (a pair that fits in 16 GB is
assumed to fit on any type with at least that much memory); on a type with less memory than
every measured one the pairs that fit nowhere stay 0. Every such estimate is low-confidence:
nothing was measured. A type measured on a few workloads is not "unmeasured": the structured
predictor transfers to it from those measurements (transfer.py).
"""
import math
from dataclasses import dataclass

import numpy as np

from .errors import UnknownGpuType

#: Extra log-space standard deviation of a throughput carried over to an unmeasured type.
UNMEASURED_LOG_SD = 0.5
#: Distance (log datasheet space) below which two types count as alike when weighting sources:
#: keeps the weight finite for a type with the same specs as a measured one.
CLOSENESS_FLOOR = 0.1


@dataclass(frozen=True, slots=True)
class GpuDatasheet:
    """A GPU type's datasheet facts, per GPU: what carries a throughput over to a type nobody
    measured. `announced`: the year the GPU was announced, which places its architecture among
    the others (None: unknown)."""

    fp32_tflops: float
    memory_bandwidth_gbs: float
    memory_gb: float
    source: str
    announced: int | None = None


#: Per GPU (not per board), boost clocks, the variants catalog/gpu_type_defaults.py describes.
#: FP32 without sparsity or tensor cores; announcement years from NVIDIA's launch announcements.
GPU_DATASHEETS: dict[str, GpuDatasheet] = {
    "k80": GpuDatasheet(
        4.37, 240.0, 12, "NVIDIA Tesla K80 datasheet: 8.73 TFLOPS FP32 and 480 GB/s per board of two GPUs; "
        "announced November 2014", 2014,
    ),
    "p100": GpuDatasheet(9.3, 732.0, 16, "NVIDIA Tesla P100 datasheet, PCIe 16 GB: 9.3 TFLOPS FP32, 732 GB/s; "
                         "announced April 2016 (GTC)", 2016),
    "v100": GpuDatasheet(15.7, 900.0, 16, "NVIDIA Tesla V100 datasheet, SXM2: 15.7 TFLOPS FP32, 900 GB/s; "
                         "announced May 2017 (GTC)", 2017),
    "t4": GpuDatasheet(8.1, 320.0, 16, "NVIDIA T4 datasheet: 8.1 TFLOPS FP32, 320 GB/s; announced September 2018",
                       2018),
    "a100": GpuDatasheet(19.5, 1555.0, 40, "NVIDIA A100 datasheet, SXM4 40 GB: 19.5 TFLOPS FP32, 1,555 GB/s; "
                         "announced May 2020 (GTC)", 2020),
    "a10": GpuDatasheet(31.2, 600.0, 24, "NVIDIA A10 datasheet: 31.2 TFLOPS FP32, 600 GB/s, 24 GB GDDR6; "
                        "announced April 2021 (GTC)", 2021),
    "h100": GpuDatasheet(67.0, 3350.0, 80, "NVIDIA H100 datasheet, SXM5 80 GB: 67 TFLOPS FP32, 3.35 TB/s; "
                         "announced March 2022 (GTC)", 2022),
    "l4": GpuDatasheet(30.3, 300.0, 24, "NVIDIA L4 datasheet: 30.3 TFLOPS FP32, 300 GB/s, 24 GB GDDR6; "
                       "announced March 2023 (GTC)", 2023),
    "l40s": GpuDatasheet(91.6, 864.0, 48, "NVIDIA L40S datasheet: 91.6 TFLOPS FP32, 864 GB/s, 48 GB GDDR6; "
                         "announced August 2023 (SIGGRAPH)", 2023),
    "h200": GpuDatasheet(67.0, 4800.0, 141, "NVIDIA H200 datasheet, SXM 141 GB: 67 TFLOPS FP32, 4.8 TB/s; "
                         "announced November 2023 (SC23)", 2023),
}


@dataclass(frozen=True, slots=True)
class UnmeasuredEstimate:
    """One job on one unmeasured GPU type (1 GPU): steps/s, rho per partner, uncertainties."""

    gpu_type: str
    tau: float
    tau_std: float  # log-space
    partners: list[str]
    rho: np.ndarray
    rho_std: np.ndarray
    low_confidence: bool = True


def carry_over(log_tau: float, compute_density: float, source: GpuDatasheet, target: GpuDatasheet) -> float:
    """log steps/s on `target` from log steps/s on `source` (the module docstring's mix)."""
    c = min(max(compute_density, 0.0), 1.0)
    return (log_tau + c * math.log(target.fp32_tflops / source.fp32_tflops)
            + (1 - c) * math.log(target.memory_bandwidth_gbs / source.memory_bandwidth_gbs))


def closeness_weights(target: str, source_types, specs: dict[str, GpuDatasheet] = GPU_DATASHEETS,
                      target_spec: GpuDatasheet | None = None) -> np.ndarray:
    """How much each source type's carry-over counts toward `target`: 1 / (d^2 + CLOSENESS_FLOOR^2),
    d the distance in log (FP32 TFLOPS, bandwidth), halved for every year between the two
    announcements (the nearer architecture generation shares more of the target's behaviour:
    kernels, caches, tensor cores the datasheet's two numbers do not show). A missing
    datasheet or year leaves that factor out for every source (equal weights)."""
    goal = target_spec or specs.get(target)
    sources = [specs.get(a) for a in source_types]
    if goal is None or any(s is None for s in sources):
        return np.ones(len(sources))
    weights = np.array([1.0 / (math.log(goal.fp32_tflops / s.fp32_tflops) ** 2
                               + math.log(goal.memory_bandwidth_gbs / s.memory_bandwidth_gbs) ** 2
                               + CLOSENESS_FLOOR**2) for s in sources])
    if goal.announced is not None and all(s.announced is not None for s in sources):
        weights *= np.array([0.5 ** abs(goal.announced - s.announced) for s in sources])
    return weights


def estimate_unmeasured(prediction, features, gpu_type: str, spec: GpuDatasheet | None = None,
                        specs: dict[str, GpuDatasheet] = GPU_DATASHEETS) -> UnmeasuredEstimate:
    """The job's estimates on `gpu_type`, absent from `prediction` (a P1 or P2 Prediction),
    from the measured types' estimates and the specs (`spec` for a type not in `specs`)."""
    target = spec or specs.get(gpu_type)
    if target is None:
        raise UnknownGpuType(f"no specs for GPU type {gpu_type!r} (known: {', '.join(sorted(specs))}); "
                             "give its FP32 TFLOPS, memory bandwidth and memory")
    if gpu_type in prediction.gpu_types:
        raise ValueError(f"{gpu_type!r} has measurements: read its prediction instead")
    measured = [a for a in prediction.gpu_types if a in specs]
    if not measured:
        raise UnknownGpuType(f"none of the measured GPU types ({', '.join(prediction.gpu_types)}) has specs")
    density = 0.5 if features.compute_density is None else features.compute_density
    fitting = [a for a in measured if prediction.isolated(a) > 0]
    carried = np.array([carry_over(math.log(prediction.isolated(a)), density, specs[a], target) for a in fitting])
    if not len(carried):
        raise ValueError(f"{features.name} fits on none of the measured GPU types: nothing to carry over")
    weights = closeness_weights(gpu_type, fitting, specs, target)
    mean = float(np.average(carried, weights=weights))
    columns = [prediction.gpu_types.index(a) for a in measured]
    rho = prediction.rho[:, columns]
    fits = rho > 0
    with np.errstate(invalid="ignore"):
        mean_fit = np.where(fits.any(axis=1), np.where(fits, rho, 0).sum(axis=1) / np.maximum(fits.sum(axis=1), 1), 0)
    smallest = min(specs[a].memory_gb for a in measured)
    if target.memory_gb < smallest:
        mean_fit = np.where(fits.all(axis=1), mean_fit, 0.0)
    spread = rho.std(axis=1) + prediction.rho_std[:, columns].mean(axis=1)
    return UnmeasuredEstimate(
        gpu_type=gpu_type,
        tau=float(math.exp(mean)),
        tau_std=float(math.hypot(math.sqrt(np.average((carried - mean) ** 2, weights=weights)), UNMEASURED_LOG_SD)),
        partners=list(prediction.partners),
        rho=np.clip(mean_fit, 0.0, 1.0),
        rho_std=spread,
    )
