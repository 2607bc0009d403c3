from .allocations import Allocation
from .jobs import Job
from .solve_runs import SolveRun, SolveStatus, SolveTrigger
from .tenancy import Membership, Tenant

__all__ = ["Allocation", "Job", "Membership", "SolveRun", "SolveStatus", "SolveTrigger", "Tenant"]
