"""What a job draws at the default power limit, learnt from telemetry in the simulation as the
control plane's catalog learns it: there every measurement that telemetry records carries the
window's mean power and utilization (brought back to the default limit where the job ran below
it, scheduler/dispatch/at_default_limit.py), and the catalog's means of a workload's single-GPU
measurements on a type are what rounds plan power with (CatalogPredictions.power_w,
.utilization) and what the power-limit model takes as the job's draw.

The reference data holds no power and no utilization, so before telemetry a round plans a job
at its type's power curve at full load, and the limit model takes the type's default limit as
its draw. `TelemetryDraws` wraps the catalog a simulated policy plans with: once a workload ran
alone on one GPU of a type, its means there are the observed ones (the catalog's own means
count as one more value each, where it has any). Power is kept to the watt: the limit model
caches its answers per draw.
"""


class TelemetryDraws:
    def __init__(self, catalog):
        self.catalog = catalog
        self._power: dict[tuple[str, str], tuple[float, int]] = {}  # (workload, type) -> (sum, count)
        self._util: dict[tuple[str, str], tuple[float, int]] = {}

    def __getattr__(self, name):
        return getattr(self.catalog, name)

    def with_catalog(self, catalog) -> "TelemetryDraws":
        """The same observations over another catalog (a profiling campaign's, simulate's refit)."""
        out = TelemetryDraws(catalog)
        out._power, out._util = self._power, self._util
        return out

    def add(self, workload: str, gpu_type: str, power_w: float | None, utilization: float | None) -> None:
        """One window of a job alone on one GPU: its draw at the default limit (W) and utilization (0..1)."""
        if power_w is not None and power_w > 0:
            self._fold(self._power, (workload, gpu_type), power_w)
        if utilization is not None and 0 <= utilization <= 1:
            self._fold(self._util, (workload, gpu_type), utilization)

    def power_w(self, workload, gpu_type):
        mean = self._mean(self._power, self.catalog.power_w(workload, gpu_type), workload, gpu_type)
        return None if mean is None else round(mean)

    def utilization(self, workload, gpu_type):
        return self._mean(self._util, self.catalog.utilization(workload, gpu_type), workload, gpu_type)

    @staticmethod
    def _fold(sums: dict, key: tuple[str, str], value: float) -> None:
        total, count = sums.get(key, (0.0, 0))
        sums[key] = (total + value, count + 1)

    @staticmethod
    def _mean(sums: dict, catalog_value: float | None, workload: str, gpu_type: str) -> float | None:
        total, count = sums.get((workload, gpu_type), (0.0, 0))
        if not count:
            return catalog_value
        if catalog_value is not None:
            total, count = total + catalog_value, count + 1
        return total / count
