"""A scenario: the jobs, the cluster, the scheduling knobs and the GPU failures, fixed before
any policy runs, so every policy sees the same arrivals."""
from dataclasses import dataclass, field

from scheduler.optimizer.problem import GpuSpec, GpuTypeSpec, SolverSettings

from .jobs import SimJob

ROUND_S = 360.0
#: Progress a job loses when it restarts elsewhere (checkpoint, restore, warm-up).
MIGRATION_OVERHEAD_S = 30.0
#: A run stops this long after the last arrival even if jobs are left (they count as not completed).
HORIZON_AFTER_LAST_ARRIVAL_S = 60 * 86400.0
#: A configuration a job held for less of a round than this gives telemetry no observation.
MIN_OBSERVED_S = 60.0


@dataclass(frozen=True)
class Failure:
    time_s: float
    gpu_id: str


@dataclass(frozen=True)
class Scenario:
    jobs: tuple[SimJob, ...]
    gpus: tuple[GpuSpec, ...]
    gpu_types: dict[str, GpuTypeSpec]
    settings: SolverSettings = field(default_factory=SolverSettings)
    round_s: float = ROUND_S
    failures: tuple[Failure, ...] = ()
    migration_overhead_s: float = MIGRATION_OVERHEAD_S
    horizon_s: float | None = None

    @property
    def end_s(self) -> float:
        if self.horizon_s is not None:
            return self.horizon_s
        return max((j.arrival_s for j in self.jobs), default=0.0) + HORIZON_AFTER_LAST_ARRIVAL_S
