"""The "unseen GPU type" protocol: on a synthetic catalog whose speed ratios are exact, on a
measurements file through bench_predictors, and its refusals."""
import csv
import json

import pytest
from django.core.management import call_command

from catalog.measurement_record import MeasurementRecord
from catalog.predictors.bench_unseen import SUITE_CASES, format_unseen, run_unseen

#: Every workload runs SPEED[type] times its base rate: one ratio per pair of types.
SPEED = {"k80": 1.0, "p100": 3.0, "v100": 5.0}
BASE = {"ResNet-18 (batch size 16)": 8.0, "ResNet-18 (batch size 32)": 6.0, "ResNet-18 (batch size 128)": 2.0,
        "LM (batch size 5)": 30.0, "LM (batch size 20)": 15.0, "LM (batch size 40)": 9.0, "A3C": 4.0}


def synthetic():
    return [MeasurementRecord(w, a, base * speed) for w, base in BASE.items() for a, speed in SPEED.items()]


def test_exact_ratios_are_recovered_after_the_suite_and_not_from_datasheets():
    report = run_unseen(synthetic(), log=lambda _: None)
    assert set(report) == set(SPEED)
    cases = [w for w in SUITE_CASES if w in BASE]
    for gpu_type, row in report.items():
        assert row["suite_cases"] == len(cases) == 5 and row["scored_workloads"] == 2
        assert row["suite_mape"] < 0.01, gpu_type  # every case says the same ratio
        assert row["zero_shot_mape"] > 0.05, gpu_type  # the datasheets' ratios are not these
        assert set(row["curve"]) == {"1", "2", "4"}  # 7 and more: not fewer than all cases
    # with one case (ResNet-18, batch 128) the LM workload comes from the datasheet corrected by
    # a residual of a family of another compute density: not exact
    assert report["v100"]["curve"]["1"] > report["v100"]["suite_mape"]
    table = format_unseen(report)
    assert "zero-shot" in table and "v100" in table and "4 cases" in table


def test_quick_skips_the_curve_and_types_without_datasheets_are_skipped():
    records = synthetic() + [MeasurementRecord(w, "mystery", base) for w, base in BASE.items()]
    logged = []
    report = run_unseen(records, quick=True, log=logged.append)
    assert "mystery" not in report and any("mystery: no datasheet" in line for line in logged)
    assert all(row["curve"] == {} for row in report.values())


def test_one_gpu_type_has_nothing_to_hold_out():
    assert run_unseen([MeasurementRecord(w, "v100", base) for w, base in BASE.items()]) == {}


def test_bench_predictors_reports_the_protocol_keys(tmp_path, capsys):
    data, out = tmp_path / "m.csv", tmp_path / "report.json"
    with open(data, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["workload", "gpu_type", "throughput"])
        for r in synthetic():
            writer.writerow([r.workload, r.gpu_type, r.throughput])
    call_command("bench_predictors", "--json", str(out), "--data", str(data), "--quick")
    section = json.loads(out.read_text())["p1"]["unseen_gpu_type"]
    assert set(section) == set(SPEED)
    for row in section.values():
        assert {"zero_shot_mape", "suite_mape", "suite_cases"} <= set(row)
        assert row["suite_cases"] == 5 and 0 <= row["suite_mape"] < row["zero_shot_mape"]
    assert "Unseen GPU type" in capsys.readouterr().out


@pytest.mark.parametrize("held", ["k80", "v100"])
def test_held_out_measurements_never_reach_the_zero_shot_fit(held, monkeypatch):
    """Zero-shot is fitted on data without the held-out type at all: a fit that saw it would
    know its configurations."""
    from catalog.predictors import bench_unseen

    seen = []
    real = bench_unseen._zero_shot

    def spy(train, full, gpu_type, scored, specs):
        seen.append((gpu_type, train.gpu_types))
        return real(train, full, gpu_type, scored, specs)

    monkeypatch.setattr(bench_unseen, "_zero_shot", spy)
    run_unseen(synthetic(), quick=True, log=lambda _: None)
    assert all(gpu_type not in types for gpu_type, types in seen) and {g for g, _ in seen} == set(SPEED)
