"""Small hand-made scenarios for the simulator's tests."""
from catalog.measurement_record import MeasurementRecord
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.scenario import Scenario
from scheduler.simulation.truth import Truth

#: One workload at 10 steps/s on one V100; V100 power at the busy utilization 0.9 is
#: 35 W + 0.9 x (300 - 35) W = 273.5 W (catalog.gpu_type_defaults: idle 35 W, TDP 300 W).
ROWS = [MeasurementRecord(workload="A", gpu_type="v100", throughput=10.0)]
V100_BUSY_W = 273.5


def truth(rows=ROWS, **kwargs) -> Truth:
    return Truth(rows, deviation=0.0, **kwargs)


def job(job_id: str, seconds_at_10_per_s: float, arrival_s: float = 0.0, min_throughput: float = 5.0) -> SimJob:
    return SimJob(job_id, "A", arrival_s, 1, seconds_at_10_per_s * 10.0, min_throughput)


def scenario(jobs, v100s: int = 1, **kwargs) -> Scenario:
    return Scenario(jobs=tuple(jobs), gpus=build_gpus((("v100", v100s),)), gpu_types=gpu_types(["v100"]), **kwargs)
