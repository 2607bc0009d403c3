"""Cells are solved in turn on the embedded broker, and in turn again when a group fails."""
from scheduler import cell_runner
from scheduler.optimizer import get_solver

from .optimizer.test_serialization import sample


def test_embedded_broker_solves_cells_in_turn(monkeypatch):
    monkeypatch.setattr(cell_runner, "group", lambda *a, **k: (_ for _ in ()).throw(AssertionError("no group")))
    assert not cell_runner.distributed()
    [allocation] = cell_runner.solve_cells([sample()])
    [again, _] = cell_runner.solve_cells([sample(), sample()])
    assert allocation.placements == again.placements == get_solver("ilp").solve(sample()).placements


def test_a_failing_group_falls_back_to_solving_in_turn(monkeypatch):
    class Broken:
        def __init__(self, *a, **k):
            pass

        def apply_async(self):
            return self

        def get(self, **kwargs):
            raise TimeoutError("no worker answered")

        def revoke(self):
            pass

    monkeypatch.setattr(cell_runner, "group", Broken)
    allocations = cell_runner.solve_cells([sample(), sample()], parallel=True)
    assert [a.placements for a in allocations] == [get_solver("ilp").solve(sample()).placements] * 2
    assert "Celery group failed" in allocations[0].notes[-1]
