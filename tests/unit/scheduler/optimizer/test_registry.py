"""The solver catalogue is the one list of solvers: the settings model's choices, the solve
API, the benchmark's rows and the distributed runner all follow it."""
from dataclasses import replace

import pytest

from scheduler.api.solve import SolveRequestSerializer
from scheduler.models import SolverConfig
from scheduler.optimizer import bench, registry
from scheduler.optimizer.base import Outcome, Solver
from scheduler.optimizer.cells import CellsSolver, solve_in_turn

from .factory import TablePredictions, gpu_type, job, node, problem


class Idle(Solver):
    """A solver that admits nothing (only its name and place in the catalogue matter here)."""

    name = "idle"

    def decide(self, inst):
        return Outcome([None] * len(inst.jobs))


IDLE = registry.SolverEntry("idle", "Admits nothing", Idle, (("idle", {}), ("idle_fast", {"time_limit_s": 1.0})))


@pytest.fixture
def with_idle(monkeypatch):
    """The catalogue with one more solver, and everything derived from it derived again."""
    catalogue = registry.CATALOGUE + (IDLE,)
    monkeypatch.setattr(registry, "CATALOGUE", catalogue)
    monkeypatch.setattr(registry, "ENTRIES", {entry.name: entry for entry in catalogue})
    monkeypatch.setattr(registry, "SOLVERS", {entry.name: entry.cls for entry in catalogue})
    monkeypatch.setattr(bench, "CATALOGUE", catalogue)
    monkeypatch.setattr(bench, "ENTRIES", registry.ENTRIES)


def test_the_model_and_the_api_offer_exactly_the_catalogue():
    names = [entry.name for entry in registry.CATALOGUE]
    assert SolverConfig._meta.get_field("solver").choices == [(e.name, e.label) for e in registry.CATALOGUE]
    assert list(SolveRequestSerializer().fields["solver"].choices) == names
    assert list(registry.SOLVERS) == names and len(set(names)) == len(names)


def test_every_solver_is_a_benchmark_row_under_its_own_class():
    keys = [key for key, _, _ in bench.solver_runs(64)]
    assert list(bench.TABLE_SOLVERS) == keys and len(set(keys)) == len(keys)
    assert {name for _, name, _ in bench.solver_runs(64)} == set(registry.SOLVERS)
    assert all(registry.get_solver(name).name == name for name in registry.SOLVERS)


def test_a_solver_added_to_the_catalogue_is_solvable_and_benchmarked(with_idle):
    assert isinstance(registry.get_solver("idle"), Idle)
    assert ("idle_fast", "idle", {"time_limit_s": 1.0}) in bench.solver_runs(64)
    p = problem(
        [job(1, "a")], node("fast", "f", 1), [gpu_type("fast", 300)], TablePredictions({("a", "fast", 1, True): 5.0})
    )
    rows = bench.solve_all(p, p.settings, 1.0, 1.0, log=lambda line: None)
    assert {"idle", "idle_fast"} <= set(rows) and rows["idle"]["placed"] == 0


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="Unknown solver 'nope'; known: cells, genetic, greedy"):
        registry.get_solver("nope")


def test_only_distributed_solvers_take_the_runner():
    def runner(problems):
        return solve_in_turn(problems)

    cells = registry.get_solver("cells", run_cells=runner)
    assert isinstance(cells, CellsSolver) and cells.run_cells is runner
    assert registry.get_solver("cells").run_cells is solve_in_turn
    assert [e.name for e in registry.CATALOGUE if e.distributed] == ["cells"]
    assert type(registry.get_solver("ilp", run_cells=runner)).__name__ == "IlpSolver"


def test_the_reference_row_gets_the_global_limit(with_idle, monkeypatch):
    seen, original = {}, Solver.solve

    def solve(self, p):
        seen.setdefault((self.name, p.settings.backend), p.settings.time_limit_s)  # cells solves by ilp later
        return original(self, p)

    monkeypatch.setattr(Solver, "solve", solve)
    p = problem([job(1, "a")], node("fast", "f", 1), [gpu_type("fast", 300)], TablePredictions())
    bench.solve_all(p, replace(p.settings, time_limit_s=3.0), 3.0, 99.0, log=lambda line: None)
    assert seen[("ilp", "highs")] == seen[("ilp", "cbc")] == 99.0 and seen[("greedy", "highs")] == 3.0
