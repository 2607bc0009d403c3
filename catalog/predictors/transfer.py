"""Transfer to a GPU type measured on a few workloads (the benchmark suite's cases): speed ratios.

A type u that the catalog measured on a handful of workloads (a profiling suite's cases, or a
few imported rows) says little about the others' throughput on u by itself, but a lot about
how u compares with the types measured fully: the suite case s gives the log speed ratio
r_a(s) = log tau(s, u) - log tau(s, a) to every such source type a. A job's 1-GPU throughput
on u is then, per source type a, its own throughput on a times a ratio:

- its family measured on u: r_a interpolated linearly in log batch size between the family's
  cases (the nearest one's beyond their range: a ratio is not extrapolated), so one measured
  batch size moves the family's other batch sizes by the same ratio, never to its value;
- a family the suite did not measure: the datasheet carry-over (gpu_specs.carry_over, which
  splits a step into a compute-bound part scaling with FP32 TFLOPS and a memory-bound part
  scaling with bandwidth) corrected by the suite's residual against it, the cases weighted by
  how close their compute density is to the job's, each family counting once, and the
  datasheet's own ratio counting as one case DENSITY_WIDTH away (so the cases of families
  unlike the job move it little); without datasheets, that weighted mean of the measured
  ratios alone; with no case measured on both types, the datasheet ratio alone.

The source types' estimates are averaged in log space, each weighted by its closeness to u
(gpu_specs.closeness_weights: datasheet distance and architecture generation) times
1 / (CV_FLOOR + its cross-validated squared log error on the suite itself), each case
predicted from the others through that source: a source whose ratios to u are erratic counts
less. Their spread, plus TRANSFER_LOG_SD, is the uncertainty. Only 1-GPU throughput is transferred; multi-GPU
configurations follow from it through the structured predictor's communication model.
"""
import math
from dataclasses import dataclass

import numpy as np

from .gpu_specs import GPU_DATASHEETS, GpuDatasheet, carry_over, closeness_weights

#: Log-space standard deviation added to a transferred throughput (the ratios vary by workload).
TRANSFER_LOG_SD = 0.15
#: Width of the compute-density kernel that weighs other families' residuals (0..1 scale).
DENSITY_WIDTH = 0.2
#: Weight of the datasheet's own ratio against the cases' (a case one DENSITY_WIDTH away weighs e^-1).
DATASHEET_WEIGHT = math.exp(-1.0)
#: Added to a source type's cross-validated squared log error before inverting it (weights stay
#: finite when a source predicts the suite's cases exactly).
CV_FLOOR = 0.01
#: Compute density assumed for a workload without one (the scale's middle).
DEFAULT_DENSITY = 0.5


@dataclass(frozen=True)
class Case:
    """One workload measured on the target type and on the source types (log steps/s, 1 GPU)."""

    family: str
    log_batch: float
    density: float
    target: float
    sources: np.ndarray  # (S,), NaN where the source type has no value


@dataclass(frozen=True)
class SuiteTransfer:
    """What the cases measured on `target` say about every other workload there."""

    target: str
    source_types: tuple[str, ...]
    cases: tuple[Case, ...]
    weights: np.ndarray  # (S,) per source type
    specs: dict

    def log_tau(self, sources: np.ndarray, family: str, log_batch: float,
                density: float | None) -> tuple[float, float]:
        """log steps/s of a job on the target type from its log steps/s on the source types
        (NaN where it does not fit or is unknown), and the log-space standard deviation."""
        d = DEFAULT_DENSITY if density is None else density
        estimates, weights = [], []
        for j, source_type in enumerate(self.source_types):
            if not np.isfinite(sources[j]):
                continue
            ratio = self._ratio(j, source_type, family, log_batch, d, sources[j])
            if ratio is not None:
                estimates.append(sources[j] + ratio)
                weights.append(self.weights[j])
        if not estimates:
            return math.nan, math.nan
        mean = float(np.average(estimates, weights=weights))
        spread = float(np.sqrt(np.average((np.array(estimates) - mean) ** 2, weights=weights)))
        return mean, math.hypot(spread, TRANSFER_LOG_SD)

    def _ratio(self, j, source_type, family, log_batch, density, source_log_tau):
        usable = [c for c in self.cases if np.isfinite(c.sources[j])]
        spec = self._spec_ratio(source_type)
        if not usable:  # nothing measured on both: the datasheets alone, if any
            return spec(density) if spec else None
        same = [c for c in usable if c.family == family]
        if same:
            return interpolate_ratio([c.log_batch for c in same], [c.target - c.sources[j] for c in same], log_batch)
        residual = [(c.target - c.sources[j]) - (spec(c.density) if spec else 0.0) for c in usable]
        kernel = np.array([math.exp(-((c.density - density) / DENSITY_WIDTH) ** 2) for c in usable])
        per_family = {}
        for c in usable:
            per_family[c.family] = per_family.get(c.family, 0) + 1
        weight = kernel / np.array([per_family[c.family] for c in usable])
        if spec is None:  # no datasheet to fall back on: the measured ratios, nearest densities first
            if weight.sum() <= 1e-12:
                weight = 1.0 / np.array([per_family[c.family] for c in usable])
            return float(np.average(residual, weights=weight))
        # The datasheet's ratio counts as one case DENSITY_WIDTH away: cases of families far
        # from the job's density barely move it.
        return spec(density) + float(np.dot(weight, residual) / (weight.sum() + DATASHEET_WEIGHT))

    def _spec_ratio(self, source_type):
        """log(tau on target / tau on source) the datasheets give at a compute density; None
        when either type has no datasheet."""
        source, target = self.specs.get(source_type), self.specs.get(self.target)
        if source is None or target is None:
            return None
        return lambda density: carry_over(0.0, density, source, target)


def interpolate_ratio(log_batches, ratios, log_batch: float) -> float:
    """Linear in log batch size between the nearest cases, the nearest case's beyond them
    (cases of one batch size averaged)."""
    xs = np.array(log_batches, dtype=float)
    ys = np.array(ratios, dtype=float)
    unique = np.unique(xs)
    means = np.array([ys[xs == x].mean() for x in unique])
    return float(np.interp(log_batch, unique, means))


def suite_transfer(target: str, source_types, log_tau_target: np.ndarray, log_tau_sources: np.ndarray,
                   features, specs: dict[str, GpuDatasheet] = GPU_DATASHEETS,
                   weights: np.ndarray | None = None) -> SuiteTransfer:
    """The transfer to `target` from the catalog's 1-GPU log steps/s: `log_tau_target` (W,)
    on the target (NaN where not measured, and for pairs that do not fit), `log_tau_sources`
    (W, S) on the source types, `features` the W workloads' features. `weights`: the source
    types' weights when already known (their cross-validation costs cases^2)."""
    cases = tuple(
        Case(f.family, math.log(f.batch_size or 1),
             DEFAULT_DENSITY if f.compute_density is None else f.compute_density,
             float(log_tau_target[i]), np.asarray(log_tau_sources[i], dtype=float))
        for i, f in enumerate(features) if np.isfinite(log_tau_target[i])
    )
    if weights is not None:
        return SuiteTransfer(target, tuple(source_types), cases, weights, specs)
    prior = closeness_weights(target, source_types, specs)
    transfer = SuiteTransfer(target, tuple(source_types), cases, prior, specs)
    return SuiteTransfer(target, tuple(source_types), cases, prior * _cross_validated(transfer), specs)


def _cross_validated(transfer: SuiteTransfer) -> np.ndarray:
    """Per source type, 1 / (CV_FLOOR + mean squared log error) of each case predicted from the
    others through that source: a source type whose ratios to the target are erratic across
    the suite (an older architecture's quirks) weighs less. 1 where fewer than two cases."""
    out = np.ones(len(transfer.source_types))
    for j, source_type in enumerate(transfer.source_types):
        errors = []
        for i, case in enumerate(transfer.cases):
            rest = transfer.cases[:i] + transfer.cases[i + 1:]
            if not np.isfinite(case.sources[j]) or not rest:
                continue
            left_out = SuiteTransfer(transfer.target, transfer.source_types, rest, transfer.weights, transfer.specs)
            ratio = left_out._ratio(j, source_type, case.family, case.log_batch, case.density, case.sources[j])
            if ratio is not None:
                errors.append((case.sources[j] + ratio - case.target) ** 2)
        if len(errors) >= 2:
            out[j] = 1.0 / (CV_FLOOR + float(np.mean(errors)))
    return out
