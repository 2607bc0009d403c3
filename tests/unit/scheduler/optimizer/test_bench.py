"""The benchmark's instance generator and report shape (a tiny size; timings are not tested)."""
import json

import pytest
from django.core.management import CommandError, call_command

from scheduler.optimizer import bench
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.problem import SolverSettings

KEYS = {"seconds", "power_w", "gap", "placed", "slo_met"}


def test_instances_follow_the_recipe():
    from catalog.gavel import read_throughputs

    predictions = CatalogPredictions.from_gavel(read_throughputs())
    p = bench.make_instance(64, predictions, 7, SolverSettings())
    per_type = {t: sum(g.gpu_type == t for g in p.gpus) for t in ("k80", "p100", "v100")}
    assert sum(per_type.values()) == 64 and max(per_type.values()) - min(per_type.values()) <= 4
    assert {sum(g.node == n for g in p.gpus) for n in {g.node for g in p.gpus}} <= {4, 8}
    assert len(p.jobs) == 48 and all(j.min_throughput > 0 for j in p.jobs)
    assert bench.make_instance(64, predictions, 7, SolverSettings()).jobs == p.jobs  # seeded


def test_report_has_the_issue_keys_for_every_solver(tmp_path):
    out = tmp_path / "bench.json"
    call_command("bench_solver", "--json", str(out), "--sizes", "24", "--ilp-time-limit", "10", "--time-limit", "2")
    report = json.loads(out.read_text())
    block = report["sizes"]["24"]
    for key in bench.TABLE_SOLVERS:
        assert KEYS <= set(block[key]), key
    assert {"variables", "constraints"} <= set(block["ilp"]) and {"variables", "constraints"} <= set(block["ilp_cbc"])
    assert block["ilp"]["same_admission"] and block["ilp"]["gap"] is not None
    assert "cbc_over_highs_time" in block


def test_bad_sizes_are_refused(tmp_path):
    with pytest.raises(CommandError, match="comma-separated"):
        call_command("bench_solver", "--json", str(tmp_path / "x.json"), "--sizes", "64,lots")


@pytest.mark.parametrize("argv, says", [
    (["--ilp-time-limit", "-5"], "argument --ilp-time-limit: '-5' is not a finite number greater than 0"),
    (["--time-limit", "-1"], "argument --time-limit: '-1' is not a finite number greater than 0"),
    (["--time-limit", "0"], "argument --time-limit: '0' is not a finite number greater than 0"),
    (["--time-limit", "nan"], "argument --time-limit: 'nan' is not a finite number greater than 0"),
    (["--json", "/nonexistent/bs.json"], "argument --json: cannot write /nonexistent/bs.json: no folder"),
])
def test_bad_limits_and_outputs_are_refused_before_any_solve(tmp_path, monkeypatch, argv, says):
    """A negative ILP limit made the reference fall back to greedy and the table compared
    against that; a missing output folder failed only after every solve."""
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: pytest.fail("solved despite a bad option"))
    with pytest.raises(CommandError, match=says):
        call_command("bench_solver", "--json", str(tmp_path / "x.json"), "--sizes", "24", *argv)
