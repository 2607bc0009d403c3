"""Predictions straight from measurement rows (plain dataclasses): the mean of what was
measured for each configuration (memory: the peak per GPU over all of a workload's
measurements, its need on any GPU). The optimiser and the benchmark run on it without the
learned predictors; the Django shell feeds it catalog rows, the benchmark Gavel's file.

A throughput of 0 means "does not fit" and is never averaged in. A single-GPU job is the
same consolidated or not. rho(w, partner, type) is the co-located single-GPU throughput
over the isolated one.
"""
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean


@dataclass(frozen=True)
class MeasurementRow:
    workload: str
    gpu_type: str
    num_gpus: int
    consolidated: bool
    partner: str | None
    throughput: float
    power_w: float | None = None
    utilisation: float | None = None
    memory_gb: float | None = None  # peak GPU memory per GPU during the measurement


class CatalogPredictions:
    def __init__(self, rows):
        tau, pair, power, util = defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list)
        memory: dict[str, float] = {}
        for row in rows:
            if row.memory_gb is not None and row.memory_gb > 0:
                memory[row.workload] = max(memory.get(row.workload, 0.0), row.memory_gb)
            consolidated = row.consolidated or row.num_gpus == 1
            if row.partner is None:
                key = (row.workload, row.gpu_type, row.num_gpus, consolidated)
                if row.throughput > 0:
                    tau[key].append(row.throughput)
                    if row.num_gpus == 1 and row.power_w is not None:
                        power[(row.workload, row.gpu_type)].append(row.power_w)
                    if row.num_gpus == 1 and row.utilisation is not None:
                        util[(row.workload, row.gpu_type)].append(row.utilisation)
            elif row.num_gpus == 1 and row.throughput > 0:
                pair[(row.workload, row.partner, row.gpu_type)].append(row.throughput)
        self._tau = {k: fmean(v) for k, v in tau.items()}
        self._pair = {k: fmean(v) for k, v in pair.items()}
        self._power = {k: fmean(v) for k, v in power.items()}
        self._util = {k: fmean(v) for k, v in util.items()}
        self._memory = memory

    @classmethod
    def from_gavel(cls, records) -> "CatalogPredictions":
        """From catalog.gavel records (read_throughputs())."""
        return cls(
            MeasurementRow(
                r.workload.name, r.gpu_type, r.num_gpus, r.consolidated, r.partner.name if r.partner else None,
                r.throughput,
            )
            for r in records
        )

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self._tau.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1))

    def rho(self, workload, partner, gpu_type):
        alone = self._tau.get((workload, gpu_type, 1, True))
        shared = self._pair.get((workload, partner, gpu_type))
        return min(1.0, shared / alone) if alone and shared else None

    def utilisation(self, workload, gpu_type):
        return self._util.get((workload, gpu_type))

    def power_w(self, workload, gpu_type):
        return self._power.get((workload, gpu_type))

    def memory_gb(self, workload):
        """The most GPU memory per GPU any measurement of the workload used (its need)."""
        return self._memory.get(workload)

    def workloads(self) -> list[str]:
        return sorted({k[0] for k in self._tau})
