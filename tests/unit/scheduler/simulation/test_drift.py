"""The truth kit: drift_truth writes a drifted measurements file that simulate --truth reads;
bad input is a clear error naming the problem, never a traceback, and writes nothing."""
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalog.measurement_csv import read_measurements
from catalog.measurement_record import MeasurementRecord
from scheduler.simulation.drift import DriftError, drift_records, parse_drift, write_measurements

from .test_command import run_as_from_shell

ROWS = [
    MeasurementRecord(workload="ResNet-50 (batch size 64)", gpu_type="v100", throughput=4.0, power_w=250.0),
    MeasurementRecord(workload="ResNet-50 (batch size 64)", gpu_type="k80", throughput=1.0, num_gpus=2,
                      consolidated=False),
    MeasurementRecord(workload="A3C", gpu_type="v100", throughput=7.0, partner="ResNet-50 (batch size 64)",
                      partner_throughput=2.0),
    MeasurementRecord(workload="A3C", gpu_type="k80", throughput=3.0),
]


def test_a_family_drift_scales_its_rows_and_its_side_of_pairs_on_the_chosen_types():
    out = drift_records(ROWS, [parse_drift("ResNet-50:v100:2")])
    assert [r.throughput for r in out] == [8.0, 1.0, 7.0, 3.0]
    assert out[2].partner_throughput == 4.0  # the partner drifted: its co-located speed too
    assert out[0].power_w == 250.0


def test_every_type_and_two_drifts_on_one_row_multiply():
    out = drift_records(ROWS, [parse_drift("A3C:*:2"), parse_drift("A3C:k80,v100:1.5")])
    assert [r.throughput for r in out] == [4.0, 1.0, 21.0, 9.0]


def test_the_written_file_reads_back_as_the_same_records(tmp_path):
    path = tmp_path / "truth.csv"
    drifted = drift_records(ROWS, [parse_drift("ResNet-50 (batch size 64):*:0.5")])
    write_measurements(drifted, path)
    assert read_measurements(path) == drifted


@pytest.mark.parametrize("text, says", [
    ("A3C:2", "takes WORKLOAD_OR_FAMILY:GPU_TYPES:FACTOR"),
    ("A3C:v100:0", "not a finite number greater than 0"),
    ("A3C:v100:nan", "not a finite number greater than 0"),
    ("A3C:*,v100:2", "or * alone"),
])
def test_a_malformed_drift_says_why(text, says):
    with pytest.raises(DriftError, match=says.replace("*", r"\*")):
        parse_drift(text)


def test_a_drift_naming_nothing_in_the_file_is_refused():
    with pytest.raises(DriftError) as refused:
        drift_records(ROWS, [parse_drift("GPT-2:*:2"), parse_drift("A3C:a100:2")])
    assert "'GPT-2' is neither a workload nor a family" in str(refused.value)
    assert "no GPU type 'a100'" in str(refused.value)


def test_the_command_writes_a_file_simulate_can_read(tmp_path):
    out = tmp_path / "drift.csv"
    call_command("drift_truth", "--factor", "A3C:*:2", "--out", str(out))
    rows = read_measurements(out)
    a3c = [r for r in rows if r.workload == "A3C" and r.partner is None and r.gpu_type == "v100" and r.num_gpus == 1]
    assert a3c and a3c[0].throughput == pytest.approx(2 * 7.18, rel=0.01)


def test_the_command_refuses_a_bad_input_file_with_its_line_and_writes_nothing(tmp_path, capsys):
    bad, out = tmp_path / "in.csv", tmp_path / "out.csv"
    bad.write_text("workload,gpu_type,throughput\nA3C,v100,-1\n")
    with pytest.raises(CommandError, match="1 problem"):
        call_command("drift_truth", "--truth", str(bad), "--factor", "A3C:*:2", "--out", str(out))
    assert f"{bad}:2: throughput: -1 is negative" in capsys.readouterr().err
    assert not out.exists()


def test_the_command_refuses_an_unknown_workload_and_writes_nothing(tmp_path):
    out = tmp_path / "out.csv"
    with pytest.raises(CommandError, match="'Foo' is neither a workload nor a family"):
        call_command("drift_truth", "--factor", "Foo:*:2", "--out", str(out))
    assert not out.exists()


def test_a_malformed_factor_is_a_usage_error_before_anything_is_read(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("drift_truth", "--factor", "A3C:v100:-2", "--out", str(tmp_path / "out.csv"))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --factor: 'A3C:v100:-2': the factor '-2' is not a finite number greater than 0" in err
    assert "Traceback" not in err and not (tmp_path / "out.csv").exists()
