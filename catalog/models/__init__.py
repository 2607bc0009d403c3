from .gpu_types import GpuType
from .limit_observations import LimitObservation
from .measurements import Measurement, MeasurementSource
from .predictor_versions import PredictionRecord, PredictorName, PredictorStatus, PredictorVersion
from .workloads import Workload, WorkloadKind

__all__ = [
    "GpuType",
    "LimitObservation",
    "Measurement",
    "MeasurementSource",
    "PredictionRecord",
    "PredictorName",
    "PredictorStatus",
    "PredictorVersion",
    "Workload",
    "WorkloadKind",
]
