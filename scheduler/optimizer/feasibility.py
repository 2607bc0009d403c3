"""The feasibility rules of a job's options, written once, as filters and scores (as in the
Kubernetes scheduling framework): a filter says whether an option (a job alone on k GPUs of a
type, a group sharing one GPU, a GPU for a tenant) is allowed, and its reason says why not
where the reason is reported; a score ranks the allowed ones (the objective's cost).

Every solver sees only what these filters allow: compile_instance builds each job's options
(memory, layout, D_j; T_min marks the options optimising solvers may take, the baselines may
take the others), candidates.py its co-location groups (sharing, tenant, memory, T_min), and
placement.py the concrete GPUs (topology). Capacity is the one rule checked while deciding
(capacity.py, the ILP's constraints), as it depends on the other jobs' choices.

Filters sit on hot paths (every job x workload x GPU type when matching partners), so they
return a bool and the reason is built only where it is reported.
"""
import math
from collections.abc import Iterable, Mapping

from .aggregation import TypeCapacity
from .finish_time import PACE_VALUE_W, pace_value
from .problem import MAX_THETA, GpuTypeSpec, JobSpec, SolverSettings

NO_MEMORY = (
    "Needs {need:g} GB of GPU memory per GPU: more than any GPU type in the cluster has ({types})."
)
BELOW_TMIN = (
    "No GPU type reaches T_min = {tmin:g} steps/s within D_j = {dj} GPU(s): the best is {best:.3g} steps/s "
    "on {k} x {gpu_type}."
)
SWITCH_TAKEN = " on PCIe switches free of other tenants"
MARGIN_HELD = (
    " {gpu_type} would give {tau:.3g} steps/s by its prediction, but nothing of {workload} was measured there and "
    "the prediction is uncertain (log-sd {log_sd:.2g}): a tight T_min goes to measured types (margin z = {z:g})."
)


# -- memory ---------------------------------------------------------------------------------

def memory_fits(need: float | None, spec: GpuTypeSpec) -> bool:
    """A job needing `need` GB per GPU (None: unknown, taken as fitting) fits a GPU of the type."""
    return need is None or need <= spec.memory_gb


def group_memory_fits(needs: Iterable[float | None], spec: GpuTypeSpec) -> bool:
    """Jobs sharing one GPU fit its memory together (an unknown need counts as nothing)."""
    return sum(need or 0.0 for need in needs) <= spec.memory_gb


def why_no_memory(need: float, specs: Mapping[str, GpuTypeSpec]) -> str:
    """Why a job fits no GPU type of the cluster (`specs`: the cluster's types by name)."""
    return NO_MEMORY.format(need=need, types=", ".join(f"{t} {spec.memory_gb:g} GB" for t, spec in specs.items()))


# -- T_min ----------------------------------------------------------------------------------

def meets_tmin(tau: float | None, job: JobSpec) -> bool:
    """A predicted throughput (None or 0: unknown) reaches the job's T_min."""
    return bool(tau) and tau >= job.min_throughput


def uncertainty(predictions, workload: str, gpu_type: str, num_gpus: int, consolidated: bool) -> tuple[float, bool]:
    """(log-space standard deviation, measured) of a predicted throughput, from the predictions'
    optional `uncertainty` accessor; predictions without one count as measured and exact."""
    doubt = getattr(predictions, "uncertainty", None)
    return doubt(workload, gpu_type, num_gpus, consolidated) if doubt is not None else (0.0, True)


def margin(log_sd: float, measured: bool, settings: SolverSettings) -> float:
    """The share of a predicted throughput a job may count on for its T_min ("prefer measured
    types for tight T_min", docs/optimization.md): all of it where the workload was measured on
    the configuration, exp(-z * log_sd) elsewhere (z = unmeasured_margin_z; 0 turns it off), so
    an uncertain estimate serves a job only when its T_min is below the estimate by z standard
    deviations."""
    return 1.0 if measured else math.exp(-settings.unmeasured_margin_z * log_sd)


def keeps_tmin(tau: float, job: JobSpec) -> bool:
    """A job keeps its T_min at a throughput estimated while sharing (matching asks it for every
    job x workload x GPU type, so it is the bare comparison)."""
    return tau >= job.min_throughput


def group_meets_tmin(taus: Iterable[float], jobs: Iterable[JobSpec]) -> bool:
    """Every member of a group keeps its T_min while sharing."""
    return all(tau >= job.min_throughput for tau, job in zip(taus, jobs))


def why_below_tmin(job: JobSpec, best_tau: float, k: int, gpu_type: str) -> str:
    """Why a job has no option meeting T_min: its fastest known configuration."""
    return BELOW_TMIN.format(tmin=job.min_throughput, dj=job.max_gpus, best=best_tau, k=k, gpu_type=gpu_type)


def why_margin_held(job: JobSpec, tau: float, log_sd: float, gpu_type: str, settings: SolverSettings) -> str:
    """Why a job is not served by an unmeasured configuration whose prediction reaches its T_min."""
    return MARGIN_HELD.format(gpu_type=gpu_type, tau=tau, workload=job.workload, log_sd=log_sd,
                              z=settings.unmeasured_margin_z)


# -- layout (consolidated or spread over nodes) ---------------------------------------------

def layout_fits(k: int, consolidated: bool, cap: TypeCapacity) -> bool:
    """k GPUs of a type on one node need a node that large; spread over nodes, they need a type
    on two nodes or more (on one node a job runs consolidated, whatever a spread measurement
    says). A single GPU is always consolidated."""
    if consolidated:
        return k <= cap.largest_node
    return cap.nodes >= 2


# -- sharing (theta) and tenants ------------------------------------------------------------

def sharing_theta(settings: SolverSettings) -> int:
    """Jobs per GPU at most, whatever the setting asks (problem.theta_error says why)."""
    return min(settings.theta, MAX_THETA)


def may_share(spec: GpuTypeSpec, members: int, theta: int) -> bool:
    """`members` jobs may share one GPU of the type: the round's theta and the type's allow it."""
    return 2 <= members <= min(theta, spec.theta)


def one_tenant(jobs: Iterable[JobSpec]) -> bool:
    """Jobs of different tenants never share a GPU (tenant isolation by construction)."""
    return len({job.tenant for job in jobs}) == 1


# -- topology -------------------------------------------------------------------------------

def switch_allows(owner: str | None, tenant: str) -> bool:
    """With topology-aware isolation a PCIe switch serves one tenant: a GPU on a switch owned
    by another tenant is not allowed (`owner` None: nobody owns it yet)."""
    return owner is None or owner == tenant


# -- scores: the objective's cost of an allowed option --------------------------------------

def values_surplus(settings: SolverSettings) -> bool:
    """Surplus throughput over T_min is worth something to the objective (throughput_value_w or
    a fairness weight): only then may a faster, dearer choice of the same capacity be chosen."""
    return settings.throughput_value_w > 0 or settings.fairness_weight > 0


def option_cost(job: JobSpec, spec: GpuTypeSpec, settings: SolverSettings, k: int, tau: float, power: float,
                weight: float, idle_on: bool, migrates: bool) -> float:
    """A job alone on k GPUs: weighted power (above idle when idle GPUs stay on), less the value
    of surplus throughput over T_min (capped at one T_min), plus the cost of moving."""
    cost = weight * (power - (k * spec.idle_w if idle_on else 0.0))
    if tau >= job.min_throughput and not job.probe:  # a probe is a measurement: its speed is worth nothing
        cost -= settings.throughput_value_w * min(tau / job.min_throughput - 1.0, 1.0)
        cost -= pace_worth(job, tau, weight)
    if migrates:
        cost += move_cost(job, settings, weight)
    return cost


def move_cost(job: JobSpec, settings: SolverSettings, weight: float) -> float:
    """What moving a placed job costs in the objective: its move penalty (keep_work.py: the
    energy a restart throws away over its remaining time, with the hysteresis margin), priced
    at the round's energy weight like the power it saves, but never below 1: a restart throws
    away the job's time too, which a low load (a weight below 1 makes energy cheap against
    throughput) does not make cheaper. Priced at the weight alone, moves were cheapest at low
    load, so jobs went to faster configurations as the load fell and back as it rose
    (docs/simulation.md). The flat migration_cost_w for a job without a penalty."""
    if job.move_penalty_w is None:
        return settings.migration_cost_w
    return max(weight, 1.0) * job.move_penalty_w


def group_cost(jobs: tuple[JobSpec, ...], spec: GpuTypeSpec, settings: SolverSettings, taus: tuple[float, ...],
               power: float, weight: float, idle_on: bool, moving: tuple[JobSpec, ...]) -> float:
    """Jobs sharing one GPU: its weighted power (above idle when idle GPUs stay on), plus the
    cost of moving its `moving` members, less the value of each member's surplus throughput."""
    cost = weight * (power - (spec.idle_w if idle_on else 0.0))
    cost += sum(move_cost(job, settings, weight) for job in moving)
    surplus = sum(min(tau / job.min_throughput - 1.0, 1.0) for job, tau in zip(jobs, taus))
    paced = sum(pace_worth(job, tau, weight) for job, tau in zip(jobs, taus))
    return cost - settings.throughput_value_w * surplus - paced


def pace_worth(job: JobSpec, tau: float, weight: float) -> float:
    """What running at `tau` is worth to a job behind its finish-time fairness (finish_time.py):
    PACE_VALUE_W, at the round's energy weight (at least 1, so a busy round's dearer power does
    not outweigh it and a quiet one's cheaper power does not make it cheap), times the part of
    the way from T_min to its pace that `tau` covers; times its pace_weight (entitlement.py: for
    a job whose tenant holds less than its entitlement, its D_j GPUs times that shortfall)."""
    if job.probe or job.pace <= job.min_throughput:
        return 0.0
    return max(weight, 1.0) * PACE_VALUE_W * job.pace_weight * pace_value(job.min_throughput, job.pace, tau)
