"""The optimisation core of GOGH: problem, power model, adaptive weight, aggregation,
co-location candidates, and the solvers behind one interface (`solve(problem) ->
Plan`), registered by name. Pure Python: no Django import anywhere in this package
(tests check it), so it is tested and benchmarked alone. See docs/optimization.md.
"""
from .keep_work import RunningWork, keep_work
from .power import PowerCurve
from .problem import (
    CurrentPlacement,
    GpuSpec,
    GpuTypeSpec,
    JobSpec,
    Placement,
    Plan,
    Predictions,
    Problem,
    SolverSettings,
)
from .registry import SOLVERS, get_solver

__all__ = [
    "CurrentPlacement", "GpuSpec", "GpuTypeSpec", "JobSpec", "Placement", "Plan", "PowerCurve",
    "Predictions", "Problem", "RunningWork", "SOLVERS", "SolverSettings", "get_solver", "keep_work",
]
