"""Power draw of a job: measured (Zeus) where it applies, else power curve x predicted utilization.

Zeus (You et al., NSDI 2023; catalog/reference/zeus) measured average power of a few networks
at each power limit. Where a workload's family matches a Zeus network on the same GPU type,
the prediction is Zeus's power at the highest limit measured (the default limit), at the
nearest batch size, with the spread across the optimisers as its uncertainty. Elsewhere the
GPU type's power curve (utilization -> W, piecewise linear) is read at the predicted
utilization: a job alone uses u = 0.5 + 0.5 x compute density (an assumption until NVML
profiles replace it), two co-located jobs their summed shares rho_w u_w + rho_p u_p (capped at
1); the uncertainty is the curve's change over +-0.15 utilization.
"""
import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ZEUS_DIR = Path(__file__).resolve().parent.parent / "reference" / "zeus"
#: Gavel families that are the same network as a Zeus trace.
ZEUS_NETWORKS = {"ResNet-50": "resnet50"}


@dataclass(frozen=True, slots=True)
class PowerEstimate:
    watts: float
    std: float
    source: str  # "zeus" or "power curve"


def read_zeus(directory: Path | str = ZEUS_DIR) -> dict:
    """{(network, gpu_type): {batch size: [average W at the highest power limit, ...]}}."""
    table = defaultdict(lambda: defaultdict(list))
    for path in sorted(Path(directory).glob("summary_power_*.csv")):
        gpu_type = path.stem.removeprefix("summary_power_")
        with open(path, encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        top = defaultdict(float)
        for row in rows:
            key = (row["network"], int(row["batch_size"]))
            top[key] = max(top[key], float(row["power_limit"]))
        for row in rows:
            key = (row["network"], int(row["batch_size"]))
            if float(row["power_limit"]) == top[key]:
                table[(row["network"], gpu_type)][key[1]].append(float(row["average_power"]))
    return {k: dict(v) for k, v in table.items()}


def curve_watts(curve: list, utilization: float) -> float:
    points = sorted(curve)
    return float(np.interp(utilization, [p[0] for p in points], [p[1] for p in points]))


def alone_utilization(compute_density: float | None) -> float:
    return 0.5 + 0.5 * (0.5 if compute_density is None else compute_density)


def predict_power(features, gpu_type: str, curve: list, zeus: dict | None = None,
                  partner_share: float = 0.0, rho: float = 1.0) -> PowerEstimate:
    """Power of the GPU running the job (with a partner using `partner_share` of it, if any)."""
    network = ZEUS_NETWORKS.get(features.family)
    measured = (zeus or {}).get((network, gpu_type)) if network else None
    if measured and partner_share == 0.0:
        batch = features.batch_size or 1
        nearest = min(measured, key=lambda b: abs(math.log(b) - math.log(batch)))
        return PowerEstimate(float(np.mean(measured[nearest])), float(np.std(measured[nearest])), "zeus")
    utilization = min(1.0, rho * alone_utilization(features.compute_density) + partner_share)
    watts = curve_watts(curve, utilization)
    spread = (
        abs(curve_watts(curve, min(1.0, utilization + 0.15)) - curve_watts(curve, max(0.0, utilization - 0.15))) / 2
    )
    return PowerEstimate(watts, spread, "power curve")
