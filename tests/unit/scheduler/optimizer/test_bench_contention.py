"""bench_solver's contention mode: every size solved alone, then beside CPU-burning processes
that the command starts and stops, and the two runs compared (a tiny size; timings are not
tested)."""
import json
import subprocess

import pytest
from django.core.management import CommandError, call_command

from scheduler.optimizer import bench


def burners_started(monkeypatch) -> list:
    """The CPU burners the command starts (CBC, also a subprocess, is not one)."""
    started, real = [], subprocess.Popen

    def recording_popen(args, *rest, **kwargs):
        process = real(args, *rest, **kwargs)
        if args[-1] == bench.BURN_CPU:
            started.append(process)
        return process

    monkeypatch.setattr(bench.subprocess, "Popen", recording_popen)
    return started


def test_contention_mode_compares_the_run_beside_cpu_burners_with_the_run_alone(tmp_path, monkeypatch, capsys):
    started = burners_started(monkeypatch)
    out = tmp_path / "bench.json"
    call_command("bench_solver", "--json", str(out), "--sizes", "24", "--ilp-time-limit", "10", "--time-limit", "2",
                 "--contention", "2")
    assert len(started) == 2 and all(process.poll() is not None for process in started)  # stopped
    report = json.loads(out.read_text())
    block = report["sizes"]["24"]
    assert report["contention"] == 2 and block["load_1min"] >= 0
    for key in bench.TABLE_SOLVERS:
        row = block[key]
        assert row["cpu_seconds"] >= 0 and "same_decision_as_quiet" in row
        assert row["placed_per_priority"] == row["quiet"]["placed_per_priority"], key
    table = capsys.readouterr().out
    assert "24 beside 2 CPU-burning processes, 1-minute load" in table
    assert "cpu s" in table and "ADMITTED" not in table


def test_without_contention_no_burner_starts_and_the_table_is_unchanged(tmp_path, monkeypatch, capsys):
    started = burners_started(monkeypatch)
    call_command("bench_solver", "--json", str(tmp_path / "b.json"), "--sizes", "24", "--ilp-time-limit", "10",
                 "--time-limit", "2")
    table = capsys.readouterr().out
    assert started == [] and "cpu s" not in table and "CPU-burning" not in table


@pytest.mark.parametrize("count, says", [
    ("-1", "argument --contention: '-1' is not a whole number of at least 0"),
    ("65", "argument --contention: '65' is more than 64 processes"),
    ("two", "argument --contention: 'two' is not a whole number of at least 0"),
])
def test_bad_contention_is_refused_before_any_solve(tmp_path, monkeypatch, count, says):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: pytest.fail("solved despite a bad option"))
    with pytest.raises(CommandError, match=says):
        call_command("bench_solver", "--json", str(tmp_path / "x.json"), "--sizes", "24", "--contention", count)
