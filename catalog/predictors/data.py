"""From plain measurement records (catalog.measurement_record) to the matrices the predictors learn from.

tau[w, c]    isolated throughput (steps/s) of workload w in configuration c = (GPU type,
             GPUs, consolidated); 0 = does not fit; NaN = unknown.
rho[w, p, a] throughput of w sharing one GPU of type a with partner p, as a fraction of
             tau(w, a, 1 GPU), clipped to [0, 1]; 0 = the pair does not fit; NaN = unknown.

The catalog policy decides which records count: the newest `window` per workload x
configuration x partner, telemetry outliers dropped, and a cell backed by fewer than
`min_samples` observed records (reference and profiling records are trusted alone) stays
unknown, so predictions there fall back to the model and are flagged low-confidence.
"""
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from catalog import gavel
from catalog.measurement_record import MeasurementRecord

from .features import WorkloadFeatures, reference_features

TRUSTED_SOURCES = ("reference", "profiling")


@dataclass(frozen=True, slots=True)
class CatalogPolicy:
    window: int = 1000
    min_samples: int = 3
    outlier_mads: float = 3.5


@dataclass
class CatalogData:
    workloads: list[str]
    features: list[WorkloadFeatures]
    gpu_types: list[str]
    configs: list[tuple[str, int, bool]]
    tau: np.ndarray
    rho: np.ndarray
    samples: np.ndarray  # records behind each rho cell (after the policy)
    power: dict = field(default_factory=dict)  # (workload, gpu_type) -> (mean W, mean utilization)

    @property
    def families(self) -> list[str]:
        return [f.family for f in self.features]

    def index(self, workload: str) -> int:
        from .errors import UnknownWorkload

        try:
            return self.workloads.index(workload)
        except ValueError:
            raise UnknownWorkload(f"unknown workload {workload!r}; the catalog knows {len(self.workloads)}: "
                                  f"{', '.join(self.workloads[:5])}, ...") from None

    def gpu_index(self, gpu_type: str) -> int:
        from .errors import UnknownGpuType

        try:
            return self.gpu_types.index(gpu_type)
        except ValueError:
            raise UnknownGpuType(f"no measurements on GPU type {gpu_type!r}; known types: "
                                 f"{', '.join(self.gpu_types)}") from None

    def single_gpu_configs(self) -> list[int]:
        """Index of the (a, 1 GPU, consolidated) configuration of each GPU type, in gpu_types order."""
        return [self.configs.index((a, 1, True)) for a in self.gpu_types]

    def without(self, names) -> "CatalogData":
        """The catalog with every record involving `names` hidden, on either side of a pair."""
        keep = [i for i, w in enumerate(self.workloads) if w not in set(names)]
        return CatalogData(
            workloads=[self.workloads[i] for i in keep],
            features=[self.features[i] for i in keep],
            gpu_types=self.gpu_types,
            configs=self.configs,
            tau=self.tau[keep],
            rho=self.rho[np.ix_(keep, keep)],
            samples=self.samples[np.ix_(keep, keep)],
            power={k: v for k, v in self.power.items() if k[0] not in set(names)},
        )


def records_from_gavel(path: Path | str = gavel.GAVEL_THROUGHPUTS) -> list[MeasurementRecord]:
    return [r.measurement() for r in gavel.read_throughputs(path)]


def apply_policy(records: list[MeasurementRecord], policy: CatalogPolicy) -> dict[tuple, list[MeasurementRecord]]:
    """Records per (workload, gpu, GPUs, consolidated, partner) after window and outlier rejection."""
    groups: dict[tuple, list[MeasurementRecord]] = defaultdict(list)
    for record in records:
        groups[(record.workload, record.gpu_type, record.num_gpus, record.consolidated, record.partner)].append(record)
    kept = {}
    for key, group in groups.items():
        ordered = sorted(group, key=lambda r: r.observed_at.timestamp() if r.observed_at else -math.inf)
        kept[key] = reject_outliers(ordered[-policy.window:], policy.outlier_mads)
    return kept


def reject_outliers(group: list[MeasurementRecord], mads: float) -> list[MeasurementRecord]:
    """Drop telemetry records further than `mads` scaled MADs from the group median."""
    telemetry = np.array([r.throughput for r in group if r.source == "telemetry"])
    if len(telemetry) < 5:
        return group
    median = np.median(telemetry)
    mad = 1.4826 * np.median(np.abs(telemetry - median))
    if mad == 0:
        return group
    return [r for r in group if r.source != "telemetry" or abs(r.throughput - median) <= mads * mad]


def peak_memory(groups: dict[tuple, list[MeasurementRecord]]) -> dict[str, float]:
    """GB per GPU each workload used at its peak while running alone, over the records the
    policy keeps (`apply_policy`'s groups: the window and the outlier rejection apply, not the
    minimum-sample threshold, since one reading of a need is enough to respect it). A shared
    GPU's reading is both jobs' memory, so co-located records do not count. Through the window,
    a need that shrank, or one spurious high reading, stops counting once newer records came in."""
    peaks: dict[str, float] = {}
    for (workload, _, _, _, partner), group in groups.items():
        readings = [r.memory_gb for r in group if r.memory_gb is not None and r.memory_gb > 0]
        if partner is None and readings:
            peaks[workload] = max(peaks.get(workload, 0.0), *readings)
    return peaks


def cell_is_known(group: list[MeasurementRecord], policy: CatalogPolicy) -> bool:
    """A cell counts once a trusted record (reference, profiling) or `min_samples` records back it."""
    return bool(group) and (any(r.source in TRUSTED_SOURCES for r in group) or len(group) >= policy.min_samples)


def _cell_value(group: list[MeasurementRecord], policy: CatalogPolicy) -> tuple[float, int]:
    """Median throughput of a cell and how many records back it; NaN when below the threshold."""
    if not cell_is_known(group, policy):
        return math.nan, len(group)
    return float(np.median([r.throughput for r in group])), len(group)


def build_catalog(
    records: list[MeasurementRecord],
    policy: CatalogPolicy = CatalogPolicy(),
    features: dict[str, WorkloadFeatures] | None = None,
) -> CatalogData:
    """The matrices of a set of records; features default to the reference families' facts."""
    kept = apply_policy(records, policy)
    workloads = sorted({k[0] for k in kept} | {k[4] for k in kept if k[4]})
    gpu_types = sorted({k[1] for k in kept if k[2] == 1 and k[3]})
    configs = sorted({(k[1], k[2], k[3]) for k in kept if k[4] is None}, key=lambda c: (c[0], c[1], not c[2]))
    for a in gpu_types:
        if (a, 1, True) not in configs:
            configs.append((a, 1, True))
    w_index = {w: i for i, w in enumerate(workloads)}
    c_index = {c: i for i, c in enumerate(configs)}
    g_index = {a: i for i, a in enumerate(gpu_types)}
    tau = np.full((len(workloads), len(configs)), np.nan)
    rho = np.full((len(workloads), len(workloads), len(gpu_types)), np.nan)
    samples = np.zeros(rho.shape, dtype=int)
    power_sums = defaultdict(list)
    for (w, a, n, cons, partner), group in kept.items():
        if partner is None:
            tau[w_index[w], c_index[(a, n, cons)]] = _cell_value(group, policy)[0]
            for r in group:
                if r.power_w is not None and n == 1:
                    power_sums[(w, a)].append((r.power_w, r.utilization))
    for (w, a, n, cons, partner), group in kept.items():
        if partner is None or n != 1 or not cons:
            continue
        value, count = _cell_value(group, policy)
        alone = tau[w_index[w], c_index[(a, 1, True)]]
        i, j, g = w_index[w], w_index[partner], g_index[a]
        samples[i, j, g] = count
        if math.isnan(value) or math.isnan(alone):
            continue
        rho[i, j, g] = 0.0 if alone <= 0 else min(1.0, value / alone)
    names = {w: (features or {}).get(w) for w in workloads}
    feats = [names[w] or reference_features(w, *_family(w)) for w in workloads]
    power = {
        key: (float(np.mean([p for p, _ in v])), _mean_or_none([u for _, u in v])) for key, v in power_sums.items()
    }
    return CatalogData(workloads, feats, gpu_types, configs, tau, rho, samples, power)


def _family(name: str) -> tuple[str, int | None]:
    parsed = gavel.parse_workload(name)
    return parsed.family, parsed.batch_size


def _mean_or_none(values):
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None
