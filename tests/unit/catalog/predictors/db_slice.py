"""The predictor tests' slice of the reference catalog, written to the test database."""
from datetime import UTC, datetime

from catalog.gavel import read_throughputs
from catalog.models import GpuType, Measurement, Workload

from .conftest import SLICE

OBSERVED = datetime(2020, 11, 4, tzinfo=UTC)


def load_slice():
    types = {name: GpuType.objects.create(name=name, memory_gb=16, tdp_w=300, idle_w=35,
                                          power_curve=[[0, 35], [1, 300]]) for name in ("k80", "p100", "v100")}
    workloads = {}
    rows = []
    for r in read_throughputs():
        if r.workload.name not in SLICE or (r.partner and (r.partner.name not in SLICE or r.num_gpus != 1)):
            continue
        for w in (r.workload, r.partner):
            if w is not None and w.name not in workloads:
                workloads[w.name] = Workload.objects.create(name=w.name, family=w.family, batch_size=w.batch_size)
        rows.append(Measurement(
            workload=workloads[r.workload.name], gpu_type=types[r.gpu_type], num_gpus=r.num_gpus,
            consolidated=r.consolidated, partner=workloads[r.partner.name] if r.partner else None,
            throughput=r.throughput, partner_throughput=r.partner_throughput, source="reference", observed_at=OBSERVED,
        ))
    Measurement.objects.bulk_create(rows)
    return workloads, types
