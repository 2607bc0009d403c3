"""manage.py simulate refuses what cannot make a meaningful run before it runs: NaN and
infinite numbers (NaN passes every `x <= 0` test), out-of-range knobs, failure times, an
output folder that does not exist, a truth file for none of the cluster's GPU types, arrivals
past the horizon; and it never writes NaN into the JSON report."""
import json
import math
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from .test_command import run_as_from_shell


@pytest.mark.parametrize("argv, says", [
    (["--jobs", "0"], "argument --jobs: '0' is not a whole number greater than 0"),
    (["--jobs-per-hour", "nan"], "argument --jobs-per-hour: 'nan' is not a finite number greater than 0"),
    (["--jobs-per-hour", "inf"], "argument --jobs-per-hour: 'inf' is not a finite number greater than 0"),
    (["--deviation", "nan"], "argument --deviation: 'nan' is not a finite number of at least 0"),
    (["--deviation", "50"], "argument --deviation: '50' is not a number in 0..2"),
    (["--noise", "nan"], "argument --noise: 'nan' is not a finite number of at least 0"),
    (["--noise", "inf"], "argument --noise: 'inf' is not a finite number of at least 0"),
    (["--noise", "1.5"], "argument --noise: '1.5' is not a number in 0..1"),
    (["--fail", "nan:v100-s0-g0"], "argument --fail: takes SECONDS:GPU_ID"),
    (["--fail", "inf:v100-s0-g0"], "argument --fail: takes SECONDS:GPU_ID"),
    (["--fail=-5:v100-s0-g0"], "argument --fail: takes SECONDS:GPU_ID"),
    (["--fail", "soon:v100-s0-g0"], "argument --fail: takes SECONDS:GPU_ID"),
    (["--fail", "7200"], "argument --fail: takes SECONDS:GPU_ID"),
    (["--cluster", "tpu"], "argument --cluster: invalid choice: 'tpu'"),
    (["--tenants", "--half-life-h", "0"], "argument --half-life-h: '0' is not a finite number greater than 0"),
    (["--half-life-h", "nan"], "argument --half-life-h: 'nan' is not a finite number greater than 0"),
    (["--gpu-variation", "nan"], "argument --gpu-variation: 'nan' is not a finite number of at least 0"),
    (["--gpu-variation", "-0.1"], "argument --gpu-variation: '-0.1' is not a finite number of at least 0"),
    (["--gpu-variation", "0.9"], "argument --gpu-variation: '0.9' is not a number in 0..0.5"),
])
def test_bad_numbers_are_usage_errors_before_anything_runs(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), *argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_an_output_folder_that_does_not_exist_is_refused_up_front(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "nonexistent" / "x.json"))
    assert exited.value.code == 2
    assert f"argument --json: cannot write {tmp_path / 'nonexistent' / 'x.json'}: no folder" in capsys.readouterr().err


def test_a_truth_file_without_the_clusters_gpu_types_is_refused(tmp_path):
    truth = tmp_path / "truth.csv"
    truth.write_text("workload,gpu_type,throughput\nA3C,a100,12\n")
    with pytest.raises(CommandError, match=r"no measurements on any of the cluster's GPU types \(k80, p100, v100\)"):
        call_command("simulate", "--json", str(tmp_path / "x.json"), "--truth", str(truth), "--jobs", "1",
                     stdout=StringIO(), stderr=StringIO())
    assert not (tmp_path / "x.json").exists()


def test_generated_arrivals_past_the_horizon_are_refused(tmp_path):
    with pytest.raises(CommandError, match="beyond the simulation's horizon of 365 days"):
        call_command("simulate", "--json", str(tmp_path / "x.json"), "--jobs", "3", "--jobs-per-hour", "1e-9",
                     stdout=StringIO(), stderr=StringIO())


def test_a_trace_arrival_past_the_horizon_is_refused_at_its_line(tmp_path):
    trace = tmp_path / "late.trace"
    trace.write_text("A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t0\n"
                     "A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t1e308\n")
    with pytest.raises(CommandError, match=r"late.trace:2: arrival_time_s 1e\+308 is beyond the simulation's horizon"):
        call_command("simulate", "--json", str(tmp_path / "x.json"), "--trace", str(trace),
                     stdout=StringIO(), stderr=StringIO())


def test_a_report_holding_nan_is_not_written(tmp_path, monkeypatch):
    """JSON has no NaN: json.dumps' default writes a bare NaN that strict readers reject."""
    monkeypatch.setattr("scheduler.management.commands.simulate.run_all",
                        lambda *args, **kwargs: {"policies": {"gogh": {"energy_kwh": math.nan}}})
    out = tmp_path / "x.json"
    with pytest.raises(CommandError, match="the report holds a number JSON cannot carry"):
        call_command("simulate", "--json", str(out), "--jobs", "1", stdout=StringIO(), stderr=StringIO())
    assert not out.exists()


def test_a_failure_at_time_zero_is_accepted(tmp_path):
    """The bound is >= 0: a GPU broken from the start is a scenario, not a mistake."""
    out = tmp_path / "x.json"
    call_command("simulate", "--json", str(out), "--jobs", "2", "--quick", "--policies", "greedy_fastest",
                 "--fail", "0:v100-s0-g0", stdout=StringIO(), stderr=StringIO())
    assert json.loads(out.read_text())["scenario"]["failures"] == [[0.0, "v100-s0-g0"]]


def test_health_adds_its_failures_the_ablation_and_the_keys(tmp_path):
    out, table = tmp_path / "x.json", StringIO()
    call_command("simulate", "--json", str(out), "--jobs", "2", "--quick", "--health",
                 "--policies", "greedy_fastest,gogh_no_health", stdout=table, stderr=StringIO())
    report = json.loads(out.read_text())
    lost = report["policies"]["gogh_no_health"]["failed_gpu_work_lost_gpu_h"]
    assert f"gogh_no_health: work lost on failed boards {lost} GPU-h; at risk flagged None h" in table.getvalue()
    signals = report["scenario"]["health_signals"]
    assert len(signals["warned"]) == 3 and signals["throttled"] not in signals["warned"]
    assert sorted(g for _, g in report["scenario"]["failures"]) == sorted(signals["warned"])
    for name in ("greedy_fastest", "gogh_no_health"):
        policy = report["policies"][name]
        assert policy["failed_gpu_work_lost_gpu_h"] >= 0
        assert policy["at_risk_flagged_before_failure_h"] is None  # neither uses the rule


def test_without_health_there_are_no_signals_and_no_ablation_by_default(tmp_path):
    out = tmp_path / "x.json"
    call_command("simulate", "--json", str(out), "--jobs", "2", "--quick", "--policies", "greedy_fastest",
                 stdout=StringIO(), stderr=StringIO())
    report = json.loads(out.read_text())
    assert report["scenario"]["health_signals"] is None and report["scenario"]["failures"] == []
    assert report["policies"]["greedy_fastest"]["failed_gpu_work_lost_gpu_h"] == 0.0
