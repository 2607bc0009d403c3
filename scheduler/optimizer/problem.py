"""The optimisation problem and its answer, as plain dataclasses (no Django).

The Django shell (scheduler.rounds) builds a Problem from the database; the benchmark builds
one from the reference data; tests build small ones by hand. Every solver takes a Problem and
returns a Plan, so they can be swapped, compared and tested alone.
"""
from dataclasses import dataclass, field
from typing import Protocol

from .power import PowerCurve

MAX_THETA = 4
THETA_REASON = (
    "Co-located throughput is measured for pairs only (Gavel: 26 x 26 ordered pairs); a group of three or "
    "more is estimated from its pairs (additive slowdown), an estimate that grows less trustworthy with "
    "every member"
)
THETA_LIMIT = (
    "theta = {theta}: at most {max} jobs share a GPU here. " + THETA_REASON + "; a larger theta is treated as {max}."
)
# For settings forms, which refuse a theta above MAX_THETA rather than cap it.
THETA_REFUSED = f"At most {MAX_THETA} jobs can share a GPU. " + THETA_REASON + "."


def theta_error(theta: int) -> str | None:
    """Why a theta is not honoured as asked (None when it is). Solvers put it in their notes
    (a theta above MAX_THETA acts as MAX_THETA, one below 1 as 1); settings forms refuse a
    theta above MAX_THETA with THETA_REFUSED."""
    if theta < 1:
        return f"theta = {theta}: at least one job runs on a GPU; treated as 1 (no sharing)."
    return THETA_LIMIT.format(theta=theta, max=MAX_THETA) if theta > MAX_THETA else None


class Predictions(Protocol):
    """What the optimiser needs to know about a workload; None means unknown.

    tau: steps/s of the whole job alone on `num_gpus` GPUs of a type, on one node
    (consolidated) or spread over nodes. rho: the job's throughput while it shares one GPU
    with `partner`, as a fraction of its isolated single-GPU throughput. utilization and
    power_w: per GPU while the job runs alone, where measured.
    """

    def tau(self, workload: str, gpu_type: str, num_gpus: int, consolidated: bool) -> float | None: ...

    def rho(self, workload: str, partner: str, gpu_type: str) -> float | None: ...

    def utilization(self, workload: str, gpu_type: str) -> float | None: ...

    def power_w(self, workload: str, gpu_type: str) -> float | None: ...

    # Optional: memory_gb(workload) -> GB per GPU the workload was measured to use at its peak,
    # or None. Predictions without it leave the memory need to JobSpec.memory_gb.
    #
    # Optional: at_power_limit(workload, gpu_type, limit_w) -> (speed, power) or None: the
    # workload's throughput and its GPU's power at that power limit, as fractions of what it does
    # at the board's default limit (docs/power_limits.md); None: unknown, the limit is not offered.
    # Predictions without it offer no limit below the default.


@dataclass(frozen=True)
class GpuTypeSpec:
    name: str
    memory_gb: float
    idle_w: float
    tdp_w: float
    power_curve: PowerCurve
    theta: int = MAX_THETA  # jobs that may share one GPU of this type, at most (SolverSettings.theta applies too)
    # Power limits (W) a solver may set on GPUs of this type below the default (tdp_w), e.g. from
    # NVML's allowed range; () offers the default limit only.
    power_limits_w: tuple[float, ...] = ()


@dataclass(frozen=True)
class GpuSpec:
    """One concrete, schedulable GPU."""

    id: str
    node: str
    gpu_type: str
    pcie_switch: str = ""
    cell: str = ""
    # This board's throughput over its type's other boards' on the same work, the factor on its type's
    # prediction (telemetry/gpu_speed.py: learnt from the jobs it ran; ageing and board-to-board
    # spread), and its own measured power curve, when fitted.
    speed: float = 1.0
    power_curve: PowerCurve | None = None
    # Flagged as drifting slower (Gpu.speed_flag): left out of its type's planning speed, used
    # last and only for jobs whose T_min holds at its own speed (optimizer/board_speeds.py).
    slow: bool = False
    # Expected to fail (telemetry/gpu_health.py: error counts rose, a failing XID): planned slow too, and
    # its running jobs leave it at their next checkpoint (keep_work.py).
    at_risk: bool = False


@dataclass(frozen=True)
class CurrentPlacement:
    """Where a placed or running job sits now (migration cost applies when it moves)."""

    gpu_ids: tuple[str, ...]
    partners: tuple[str, ...] = ()  # ids of the jobs sharing its GPU (at most theta - 1)
    power_limit_w: float | None = None  # the limit its GPUs run at now; None: the default


@dataclass(frozen=True)
class JobSpec:
    id: str
    workload: str
    tenant: str
    min_throughput: float  # T_min, steps/s
    max_gpus: int  # D_j
    priority: int = 0
    memory_gb: float | None = None  # per GPU, when the user said; None: the workload's measured peak, if any
    current: CurrentPlacement | None = None
    # What moving or stopping it throws away (keep_work.py fills these for placed/running jobs):
    move_penalty_w: float | None = None  # W-equivalent of a move; None: SolverSettings.migration_cost_w
    pinned: bool = False  # in its move cool-down: only its current configuration, on its GPUs
    work_at_risk: float = 0.0  # GPU-seconds lost if it stopped now (victims losing least go first)
    leaving: bool = False  # leaves the board at risk it runs on this round: not kept on its GPUs
    # Measured below its T_min where it runs (keep_work.below_tmin): its measured steps/s, and the
    # least predicted steps/s of a configuration worth moving to (staying is then priced above them).
    measured_throughput: float | None = None
    move_pays_at: float | None = None
    # Exploration (exploration.py): a bounded probe on one GPU type the predictions call too slow.
    # A probe runs alone on exactly D_j GPUs (the largest block within it) of only_gpu_type, at any
    # predicted throughput (even unknown), and is admitted after every non-probe job.
    probe: bool = False
    only_gpu_type: str | None = None  # None: any type
    # Its tenant's fair-share factor (fair_share.py), 0..1: within a priority level, jobs of
    # tenants that used less of their share are admitted first (admission.py).
    fair_share: float = 1.0
    # The steps/s that keep its finish-time fairness (finish_time.py; 0: T_min is enough): in
    # the power phase, throughput from T_min up to it is worth up to finish_time.PACE_VALUE_W.
    pace: float = 0.0
    # Times finish_time.PACE_VALUE_W its pace is worth: its GPUs asked times its tenant's shortfall
    # below its entitlement where the tenant holds less (entitlement.py), else 1.
    pace_weight: float = 1.0
    # A replica of an inference service (docs/services.md): its T_min is its latency SLO, so a
    # shared GPU where it no longer meets it is not kept (candidates.py), and it keeps its GPU
    # when its partner leaves (placement.py); keep_work.py prices its moves higher.
    service: bool = False
    # A replica of a service whose plan cannot meet its SLO even at its most replicas
    # (serving/replicas.py, a plan's reason): it shares its GPU with no one, so it serves at its
    # full speed (candidates.py, service_partners.py), where a partner would hold it at its capped T_min.
    alone: bool = False


@dataclass(frozen=True)
class QuotaSpec:
    """A tenant's nominal quota (docs/tenants.md): `gpus` GPUs of `gpu_type` are its own whenever
    its jobs can use them; while they do not, tenants that may borrow use them, and give them
    back (preempted with notice) when the owner's jobs need them."""

    tenant: str
    gpu_type: str
    gpus: int


@dataclass(frozen=True)
class SolverSettings:
    """Knobs of a round; the Django shell fills them from the SolverConfig singleton."""

    solver: str = "ilp"
    backend: str = "highs"  # "highs" (highspy) or "cbc" (bundled with PuLP)
    time_limit_s: float = 10.0  # CPU seconds of the solving thread, not wall-clock ones (cpu_clock.py)
    # > 0: each integer program of `ilp` stops at this many branch-and-bound nodes instead of the
    # time limit, the same work on any machine (simulate's: its figures must not depend on the load).
    node_limit: int = 0
    gap: float = 0.01
    base_energy_weight: float = 1.0
    adaptive_weight: bool = True
    weight_clip: tuple[float, float] = (0.25, 4.0)  # multiples of base_energy_weight
    load_window: int = 20  # rounds of load history the adaptive weight looks at
    throughput_value_w: float = 0.0  # W-equivalent of one unit of relative surplus over T_min
    fairness_weight: float = 0.0  # 0: off; see fairness.py (dimensionless: GPUs of power per unit of least share)
    theta: int = 2
    migration_cost_w: float = 50.0
    move_cooldown_s: float = 600.0  # a job placed or moved stays put this long (keep_work.py)
    move_hysteresis: float = 0.2  # a move's saving must beat its cost by this fraction
    max_preemptions_per_hour: int = 2
    max_moves_per_job: int = 3  # moves to save energy over a job's life, at most
    idle_gpus_powered_down: bool = True
    topology_isolation: bool = False  # tenants never share a PCIe switch
    cell_size_gpus: int = 1024
    seed: int = 0
    genetic_population: int = 24
    genetic_generations: int = 60
    # "Prefer measured types for tight T_min": on a configuration the workload was never measured
    # on, a job meets T_min only when tau * exp(-z * log_sd) >= T_min (feasibility.margin).
    unmeasured_margin_z: float = 1.0
    # Power limit as a decision (docs/power_limits.md): options at each of a type's power_limits_w
    # besides the default; False plans every GPU at its default limit.
    power_limits: bool = True


@dataclass(frozen=True)
class Problem:
    jobs: tuple[JobSpec, ...]
    gpus: tuple[GpuSpec, ...]
    gpu_types: dict[str, GpuTypeSpec]
    predictions: Predictions
    settings: SolverSettings = field(default_factory=SolverSettings)
    load_history: tuple[float, ...] = ()  # cluster load of earlier rounds, newest last
    # Co-location candidates fixed by a coordinator (cells: the whole cluster's matching, so a
    # cell groups the jobs the global decision it was routed by groups), as chains of job ids
    # (the pair of its first two, the group of its first three, ...); None: the solver computes
    # its own matching (candidates.py).
    matching: tuple[tuple[str, ...], ...] | None = None
    # A feasible decision known beforehand (cells: the coordinator's global admission decision's
    # share of a cell), as (job id, GPU type, GPUs, consolidated, partner ids) per admitted
    # job; the ILP starts from it where it admits more than its greedy decision (start.py).
    admission_start: tuple[tuple[str, str, int, bool, tuple[str, ...]], ...] | None = None
    # Tenants' nominal quotas per GPU type (none: no quotas, every tenant borrows freely), and
    # the tenants that may not run beyond their own quota.
    quotas: tuple[QuotaSpec, ...] = ()
    no_borrowing: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Placement:
    job_id: str
    gpu_type: str
    gpu_ids: tuple[str, ...]
    consolidated: bool
    partners: tuple[str, ...]  # ids of the jobs sharing its GPU, () alone
    predicted_throughput: float
    predicted_power_w: float  # this job's share of the power of its GPUs
    power_limit_w: float | None = None  # set on each of its GPUs (shared by its partners); None: the default

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_ids)


@dataclass
class Plan:
    """A solver's decision: where each admitted job goes, why every other job waits. (The Django shell
    applies it as `scheduler.models.Allocation` rows, one per job and GPU.)"""

    solver: str
    placements: dict[str, Placement]
    reasons: dict[str, str]  # job id -> why it stays pending
    power_w: float
    objective: float
    status: str  # optimal | feasible | fallback | failed
    energy_weight: float
    load: float
    seconds: float = 0.0
    gap: float | None = None
    bound: float | None = None
    variables: int = 0
    constraints: int = 0
    fallback_reason: str = ""
    notes: list[str] = field(default_factory=list)
