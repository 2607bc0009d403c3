"""Predictions straight from measurement records (catalog.measurement_record): the mean of
what was measured for each configuration (memory: the peak per GPU over all of a workload's
measurements, its need on any GPU). The optimiser and the benchmark run on it without the
learned predictors; the Django shell feeds it the catalog's records, the benchmark Gavel's file.

A throughput of 0 means "does not fit" and is never averaged in. A single-GPU job is the
same consolidated or not. rho(w, partner, type) is the co-located single-GPU throughput
over the isolated one. Speed and power at a power limit come from the Zeus-based model
(catalog/predictors/power_limits.py), with the measured power as the job's draw.
"""
from collections import defaultdict
from collections.abc import Iterable
from math import log
from statistics import fmean, pstdev

from catalog.measurement_record import MeasurementRecord


class CatalogPredictions:
    def __init__(self, rows: Iterable[MeasurementRecord]):
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
                    if row.num_gpus == 1 and row.utilization is not None:
                        util[(row.workload, row.gpu_type)].append(row.utilization)
            elif row.num_gpus == 1 and row.throughput > 0:
                pair[(row.workload, row.partner, row.gpu_type)].append(row.throughput)
        self._tau = {k: fmean(v) for k, v in tau.items()}
        self._log_sd = {k: pstdev([log(x) for x in v]) for k, v in tau.items() if len(v) > 1}
        self._pair = {k: fmean(v) for k, v in pair.items()}
        self._power = {k: fmean(v) for k, v in power.items()}
        self._util = {k: fmean(v) for k, v in util.items()}
        self._memory = memory

    @classmethod
    def from_gavel(cls, records) -> "CatalogPredictions":
        """From catalog.gavel records (read_throughputs())."""
        return cls(r.measurement() for r in records)

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self._tau.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1))

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated) -> tuple[float, bool]:
        """(log-space spread of the configuration's measurements, measured): every value here
        is measured; one measurement has no spread to show (0)."""
        return self._log_sd.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1), 0.0), True

    def rho(self, workload, partner, gpu_type):
        alone = self._tau.get((workload, gpu_type, 1, True))
        shared = self._pair.get((workload, partner, gpu_type))
        return min(1.0, shared / alone) if alone and shared else None

    def utilization(self, workload, gpu_type):
        return self._util.get((workload, gpu_type))

    def power_w(self, workload, gpu_type):
        return self._power.get((workload, gpu_type))

    def at_power_limit(self, workload, gpu_type, limit_w):
        # Imported here: catalog.predictors loads the predictor networks' libraries, which a
        # round that offers no power limit never needs.
        from catalog.predictors.power_limits import default_model

        return default_model().at_power_limit(workload, gpu_type, limit_w, draw_w=self.power_w(workload, gpu_type))

    def memory_gb(self, workload):
        """The most GPU memory per GPU any measurement of the workload used (its need)."""
        return self._memory.get(workload)

    def workloads(self) -> list[str]:
        return sorted({k[0] for k in self._tau})
