"""bench_round: its synthetic history, and the command end to end in its own process (it makes
and drops a scratch database, which a test's own connection must not do)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from scheduler import round_bench

ROOT = Path(__file__).resolve().parents[3]


def configurations(n):
    return [round_bench.Configuration(workload_id=i, gpu_type_id=1, num_gpus=1, consolidated=True, throughput=10.0 * i)
            for i in range(1, n + 1)]


def test_the_history_spreads_rows_round_robin_oldest_first_with_one_outlier_in_fifty():
    rows = list(round_bench.history(configurations(3), 150, seed=1))
    assert [row.configuration.workload_id for row in rows[:4]] == [1, 2, 3, 1]
    assert [row.seconds_before_now for row in rows] == sorted((row.seconds_before_now for row in rows), reverse=True)
    outliers = [row for row in rows if row.throughput == 10.0 * row.configuration.throughput]
    assert len(outliers) == 3
    assert all(0.95 <= row.throughput / row.configuration.throughput <= 1.05 for row in rows if row not in outliers)
    assert list(round_bench.history(configurations(3), 150, seed=1)) == rows


def test_the_same_seed_picks_the_same_configurations():
    candidates = configurations(20)
    picked = round_bench.pick_configurations(candidates, 5, seed=7)
    assert picked == round_bench.pick_configurations(list(reversed(candidates)), 5, seed=7)
    assert len(set(picked)) == 5
    assert round_bench.pick_configurations(candidates, 50, seed=7) == round_bench.pick_configurations(candidates, 20, 7)


def bench(tmp_path, *args):
    env = {**os.environ, "GOGH_VAR_DIR": str(tmp_path / "var")}
    return subprocess.run([sys.executable, "manage.py", "bench_round", "--json", str(tmp_path / "report.json"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_command_times_one_round_on_a_scratch_database_and_writes_stable_keys(tmp_path):
    done = bench(tmp_path, "--jobs", "6", "--gpus", "12", "--measurements", "400", "--configurations", "3")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report) == {"database", "measurements", "configurations", "window", "insert_s", "jobs", "gpus", "seed",
                           "round", "load_before", "load_after"}
    assert set(report["round"]) == {*round_bench.PHASES, "cpu", "placed", "solver", "status", "queries", "events",
                                    "event_batches", "catalog_records"}
    assert set(report["round"]["cpu"]) == set(round_bench.PHASES)
    assert report["configurations"] == 3 and report["jobs"] == 6 and report["measurements"] > 400
    assert report["round"]["placed"] > 0 and report["round"]["event_batches"] == 2  # the solve run, then the jobs
    assert "catalog_read" in done.stdout and "Report written to" in done.stdout
    assert not (tmp_path / "var" / "bench_round.sqlite3").exists()  # the scratch database is gone


def test_more_jobs_than_the_cluster_makes_is_a_one_line_error(tmp_path):
    done = bench(tmp_path, "--jobs", "100", "--gpus", "12")
    assert done.returncode != 0 and "ask for fewer jobs or more GPUs" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "report.json").exists()
