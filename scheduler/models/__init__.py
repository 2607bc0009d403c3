from .allocations import Allocation
from .executor_runs import ExecutorRun, ExecutorSync
from .interruptions import InterruptionKind, JobInterruption
from .job_measurements import JobMeasurement
from .jobs import Job
from .profiling import CampaignState, CampaignTrigger, ProfilingCampaign
from .services import Service, ServiceState, ServiceTraffic
from .solve_runs import SolveRun, SolveStatus, SolveTrigger
from .solver_config import SolverConfig, SolverConfigChange
from .tenancy import Membership, Tenant, TenantEnergyDay, TenantQuota, TenantUsage

__all__ = [
    "Allocation",
    "CampaignState",
    "CampaignTrigger",
    "ExecutorRun",
    "ExecutorSync",
    "InterruptionKind",
    "Job",
    "JobInterruption",
    "JobMeasurement",
    "Membership",
    "ProfilingCampaign",
    "Service",
    "ServiceState",
    "ServiceTraffic",
    "SolveRun",
    "SolveStatus",
    "SolveTrigger",
    "SolverConfig",
    "SolverConfigChange",
    "Tenant",
    "TenantEnergyDay",
    "TenantQuota",
    "TenantUsage",
]
