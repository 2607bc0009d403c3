"""One measurement as plain data: the shape every reader gives and every consumer reads.

The CSV reader (measurement_csv), Gavel's reader (gavel), the catalog's database reads
(services.predictors_store), the predictors (predictors.data), the optimiser's measured means
(scheduler.optimizer.catalog_predictions) and the simulator all pass this record, so a fact of a
measurement has one name wherever it travels. No Django, so the optimiser's core may import it.
Build it by keyword: fields with defaults are many and alike (three optional floats in a row).
"""
from datetime import datetime
from typing import NamedTuple


class MeasurementRecord(NamedTuple):
    """A job's measured throughput in one configuration: alone (partner None) or sharing one GPU
    with a partner job. A named tuple: a round builds one per measurement of the catalog policy's
    windows (some 100,000), and a frozen dataclass took three times as long to make."""

    workload: str
    gpu_type: str
    throughput: float  # steps/s of the whole job; 0: the configuration does not fit
    num_gpus: int = 1
    consolidated: bool = True
    partner: str | None = None
    partner_throughput: float | None = None
    power_w: float | None = None  # mean per GPU
    utilization: float | None = None  # mean GPU utilization, 0..1
    memory_gb: float | None = None  # peak GPU memory per GPU during the measurement
    source: str = "reference"  # reference, profiling, telemetry or shadow (catalog.models.MeasurementSource)
    observed_at: datetime | None = None
    reference: str = ""  # where the value comes from (a paper, a run, a file)
