"""A scenario: the jobs, the cluster, the scheduling knobs and the GPU failures, fixed before
any policy runs, so every policy sees the same arrivals."""
from dataclasses import dataclass, field

from scheduler.optimizer.problem import GpuSpec, GpuTypeSpec, QuotaSpec, SolverSettings

from .boards import Boards
from .checkpoints import DEFAULT_RESTART_OVERHEAD_S
from .jobs import SimJob
from .modern import Campaign
from .services import SimService
from .tenants import DEFAULT_HALF_LIFE_H, DEFAULT_TENANT

ROUND_S = 360.0
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
    #: workload -> seconds a restart costs it (checkpoints.py); a workload missing costs the default.
    restart_overhead_s: dict[str, float] = field(default_factory=dict)
    horizon_s: float | None = None
    #: A profiling campaign holding these GPUs from the start (modern.py); None: no campaign.
    campaign: Campaign | None = None
    #: Tenant -> shares (tenants.py); the default scenario has one tenant.
    tenants: dict[str, int] = field(default_factory=lambda: {DEFAULT_TENANT: 1})
    quotas: tuple[QuotaSpec, ...] = ()
    #: Fair-share usage halves every this many seconds.
    half_life_s: float = DEFAULT_HALF_LIFE_H * 3600.0
    #: The boards' true speeds (boards.py); by default every board at its type's speed.
    boards: Boards = field(default_factory=lambda: Boards(()))
    #: Inference services beside the jobs (services.py), and each one's true requests/s per minute.
    services: tuple[SimService, ...] = ()
    traces: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def restart_overhead(self, workload: str) -> float:
        return self.restart_overhead_s.get(workload, DEFAULT_RESTART_OVERHEAD_S)

    @property
    def end_s(self) -> float:
        if self.horizon_s is not None:
            return self.horizon_s
        return max((j.arrival_s for j in self.jobs), default=0.0) + HORIZON_AFTER_LAST_ARRIVAL_S
