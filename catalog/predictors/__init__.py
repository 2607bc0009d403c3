"""GOGH's performance predictors (P1, P2), their baselines and benchmark: pure Python, no Django.

The catalog's Django shell (catalog.services.predictors) feeds these plain records and stores
what they learn; everything here can be trained, tested and benchmarked without a database.
"""
from .data import CatalogData, CatalogPolicy, Record, build_catalog, records_from_csv, records_from_gavel
from .errors import UnknownGpuType, UnknownWorkload
from .estimator import ARCHITECTURES, Observation, PerformancePredictor

__all__ = [
    "ARCHITECTURES",
    "CatalogData",
    "CatalogPolicy",
    "Observation",
    "PerformancePredictor",
    "Record",
    "UnknownGpuType",
    "UnknownWorkload",
    "build_catalog",
    "records_from_csv",
    "records_from_gavel",
]
