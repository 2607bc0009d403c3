"""Every write to the catalog goes through these functions (keyword-only, atomic).

The API, the management commands and (later) Celery tasks call them; none of them writes to
the catalog's models directly. The admin is the one exception, as an operator's raw tool.
"""
from .gpu_types import gpu_type_create, gpu_type_delete, gpu_type_update
from .measurements import measurement_record, measurements_create, measurements_import
from .reference import LoadCounts, ReferenceLoadResult, catalog_load_reference
from .workloads import workload_create, workload_delete, workload_update

__all__ = [
    "LoadCounts",
    "ReferenceLoadResult",
    "catalog_load_reference",
    "gpu_type_create",
    "gpu_type_delete",
    "gpu_type_update",
    "measurement_record",
    "measurements_create",
    "measurements_import",
    "workload_create",
    "workload_delete",
    "workload_update",
]
