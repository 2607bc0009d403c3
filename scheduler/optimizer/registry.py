"""Solvers by name: the one place that knows them all (settings, API and benchmark look here)."""
from .base import Solver
from .cells import CellsSolver
from .genetic import GeneticSolver
from .greedy_efficient import GreedyEfficient
from .greedy_fastest import GreedyFastest
from .greedy_power import GreedyPower
from .ilp import IlpSolver
from .random_policy import RandomPolicy
from .round_robin import RoundRobin

SOLVERS: dict[str, type[Solver]] = {
    cls.name: cls
    for cls in (
        IlpSolver, GeneticSolver, CellsSolver, GreedyPower, GreedyEfficient, GreedyFastest, RoundRobin, RandomPolicy
    )
}


def get_solver(name: str) -> Solver:
    try:
        return SOLVERS[name]()
    except KeyError:
        raise ValueError(f"Unknown solver {name!r}; known: {', '.join(sorted(SOLVERS))}.") from None
