"""bench_predictors on a small measurements CSV (--data), the way an operator benchmarks their own cluster."""
import csv
import json

from django.core.management import call_command

from catalog.gavel import read_throughputs

KEEP = {"ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)", "LM (batch size 10)", "LM (batch size 20)", "A3C"}


def test_quick_benchmark_on_a_measurements_file(tmp_path, capsys):
    data = tmp_path / "measurements.csv"
    with open(data, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["workload", "gpu_type", "num_gpus", "partner", "throughput", "partner_throughput"])
        for r in read_throughputs():
            if r.gpu_type in ("v100", "k80") and r.consolidated and r.workload.name in KEEP and (
                    r.partner is None or (r.partner.name in KEEP and r.num_gpus == 1)):
                writer.writerow([r.workload.name, r.gpu_type, r.num_gpus, r.partner.name if r.partner else "",
                                 r.throughput, r.partner_throughput or ""])
    out = tmp_path / "report.json"
    call_command("bench_predictors", "--json", str(out), "--data", str(data), "--quick")
    report = json.loads(out.read_text())
    assert report["settings"]["workloads"] == 5 and report["data"] == str(data)
    rows = {"feedforward", "rnn", "transformer", "structured", "ensemble", "low_rank"}
    assert set(report["p1"]["leave_one_workload_out"]) >= rows
    assert "LOWO val" in capsys.readouterr().out
