"""GOGH's performance predictors (P1, P2), their baselines and benchmark: pure Python, no Django.

The catalog's Django shell (catalog.services.predictors) feeds these plain records and stores
what they learn; everything here can be trained, tested and benchmarked without a database.
"""
from .data import CatalogData, CatalogPolicy, build_catalog, records_from_gavel
from .errors import UnknownGpuType, UnknownWorkload
from .estimator import ARCHITECTURES, NET_ARCHITECTURES, Observation, PerformancePredictor
from .gpu_specs import GPU_DATASHEETS, GpuDatasheet, UnmeasuredEstimate, estimate_unmeasured

__all__ = [
    "ARCHITECTURES",
    "CatalogData",
    "CatalogPolicy",
    "GPU_DATASHEETS",
    "GpuDatasheet",
    "NET_ARCHITECTURES",
    "Observation",
    "PerformancePredictor",
    "UnknownGpuType",
    "UnknownWorkload",
    "UnmeasuredEstimate",
    "build_catalog",
    "estimate_unmeasured",
    "records_from_gavel",
]
