from .gpu_types import GpuType
from .measurements import Measurement, MeasurementSource
from .predictor_versions import PredictionRecord, PredictorName, PredictorStatus, PredictorVersion
from .workloads import Workload, WorkloadKind

__all__ = [
    "GpuType",
    "Measurement",
    "MeasurementSource",
    "PredictionRecord",
    "PredictorName",
    "PredictorStatus",
    "PredictorVersion",
    "Workload",
    "WorkloadKind",
]
