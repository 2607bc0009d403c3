from .gpu_types import GpuType
from .measurements import Measurement, MeasurementSource
from .workloads import Workload, WorkloadKind

__all__ = ["GpuType", "Measurement", "MeasurementSource", "Workload", "WorkloadKind"]
