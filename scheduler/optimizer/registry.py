"""The solver catalogue: the one place that lists the solvers. The settings model's choices,
the solve API, the benchmark's rows and the Django shell's distributed `cells` runner are all
derived from it, so a solver added here appears everywhere (a test checks it)."""
from collections.abc import Callable
from dataclasses import dataclass, field

from .base import Solver
from .cells import CellsSolver
from .genetic import GeneticSolver
from .greedy_efficient import GreedyEfficient
from .greedy_fastest import GreedyFastest
from .greedy_power import GreedyPower
from .ilp import IlpSolver
from .random_policy import RandomPolicy
from .round_robin import RoundRobin

# The benchmark's time limit of the genetic algorithm: a safety net only, as it stops on its
# generation budget.
GENETIC_BENCH_LIMIT_S = 5.0


@dataclass(frozen=True)
class SolverEntry:
    name: str  # SolverSettings.solver and SolverConfig.solver
    label: str  # the settings form's choice
    cls: type[Solver]
    # The benchmark's rows of this solver: (report key, settings overrides).
    bench_rows: tuple[tuple[str, dict], ...] = field(default=())
    # The benchmark's reference: gets the global ILP time limit, reports its model's size, and
    # every other row is compared with its admission and power.
    reference: bool = False
    # Approximate at admission: where it admits differently from the reference the benchmark
    # finds the global optimum at its own admission to compare its power with.
    approximate: bool = False
    # Solves in parts that a runner maps (the Django shell passes one that uses Celery workers).
    distributed: bool = False


CATALOGUE: tuple[SolverEntry, ...] = (
    SolverEntry("ilp", "Integer program (ilp)", IlpSolver,
                (("ilp", {"backend": "highs"}), ("ilp_cbc", {"backend": "cbc"})), reference=True),
    SolverEntry("genetic", "Genetic algorithm", GeneticSolver,
                (("genetic", {"time_limit_s": GENETIC_BENCH_LIMIT_S}),), approximate=True),
    SolverEntry("cells", "Hierarchical cells", CellsSolver, (("cells", {}),), approximate=True, distributed=True),
    SolverEntry("greedy", "Greedy, least power", GreedyPower, (("greedy", {}),)),
    SolverEntry("greedy_efficient", "Greedy, most throughput per watt", GreedyEfficient, (("greedy_efficient", {}),)),
    SolverEntry("greedy_fastest", "Greedy, fastest", GreedyFastest, (("greedy_fastest", {}),)),
    SolverEntry("round_robin", "Round robin", RoundRobin, (("round_robin", {}),)),
    SolverEntry("random", "Random", RandomPolicy, (("random", {}),)),
)
ENTRIES: dict[str, SolverEntry] = {entry.name: entry for entry in CATALOGUE}
SOLVERS: dict[str, type[Solver]] = {entry.name: entry.cls for entry in CATALOGUE}
SOLVER_CHOICES: list[tuple[str, str]] = [(entry.name, entry.label) for entry in CATALOGUE]


def get_solver(name: str, *, run_cells: Callable | None = None) -> Solver:
    """The solver of that name; `run_cells` maps a distributed solver's parts (in turn when None)."""
    try:
        entry = ENTRIES[name]
    except KeyError:
        raise ValueError(f"Unknown solver {name!r}; known: {', '.join(sorted(SOLVERS))}.") from None
    if entry.distributed and run_cells is not None:
        return entry.cls(run_cells=run_cells)
    return entry.cls()
