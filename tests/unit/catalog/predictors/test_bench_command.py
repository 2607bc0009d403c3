"""bench_predictors on a small measurements CSV (--data), the way an operator benchmarks their own cluster."""
import csv
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalog.gavel import read_throughputs

KEEP = {"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)", "LM (batch size 10)", "LM (batch size 20)", "A3C"}


def write_measurements(data, colocated=True):
    with open(data, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["workload", "gpu_type", "num_gpus", "partner", "throughput", "partner_throughput"])
        for r in read_throughputs():
            if r.gpu_type in ("v100", "k80") and r.consolidated and r.workload.name in KEEP and (
                    r.partner is None or (colocated and r.partner.name in KEEP and r.num_gpus == 1)):
                writer.writerow([r.workload.name, r.gpu_type, r.num_gpus, r.partner.name if r.partner else "",
                                 r.throughput, r.partner_throughput or ""])


def test_quick_benchmark_on_a_measurements_file(tmp_path, capsys):
    data = tmp_path / "measurements.csv"
    write_measurements(data)
    out = tmp_path / "report.json"
    call_command("bench_predictors", "--json", str(out), "--data", str(data), "--quick")
    report = json.loads(out.read_text())
    assert report["settings"]["workloads"] == 5 and report["data"] == str(data)
    rows = {"feedforward", "rnn", "transformer", "structured", "ensemble", "low_rank"}
    assert set(report["p1"]["leave_one_workload_out"]) >= rows
    assert "LOWO val" in capsys.readouterr().out


def test_a_file_without_co_location_reports_rho_as_none(tmp_path, capsys):
    """An operator who never co-locates: isolated throughput is scored, rho is None ("-" in
    the table); the low-rank baseline used to fail with "SVD did not converge"."""
    data, out = tmp_path / "alone.csv", tmp_path / "report.json"
    write_measurements(data, colocated=False)
    call_command("bench_predictors", "--json", str(out), "--data", str(data), "--quick")
    report = json.loads(out.read_text())
    for name, scores in report["p1"]["leave_one_workload_out"].items():
        assert scores["val_mae"] is None and scores["iso_mape"]["zero_shot"] > 0, name
    assert report["p2"]["curve"]["structured"]["0"]["rho_mae"] is None
    assert "no co-location data" in capsys.readouterr().out


def test_three_isolated_rows_are_enough(tmp_path):
    data, out = tmp_path / "three.csv", tmp_path / "report.json"
    data.write_text("workload,gpu_type,throughput\nA3C,v100,5.0\nLM (batch size 10),v100,20.0\n"
                    "ResNet-18 (batch size 32),v100,30.0\n")
    call_command("bench_predictors", "--json", str(out), "--data", str(data), "--quick")
    assert json.loads(out.read_text())["settings"]["workloads"] == 3


@pytest.mark.parametrize("args, message", [
    (["--json", "/nonexistent/dir/x.json"], "no folder /nonexistent/dir"),
    (["--json", "{tmp}"], "is a directory"),
    (["--json", "{tmp}/x.json", "--seed", "-1"], "'-1' is not a whole number of at least 0"),
])
def test_bad_options_fail_before_the_run(tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("bench_predictors", *[a.format(tmp=tmp_path) for a in args])
    assert not (tmp_path / "x.json").exists()
