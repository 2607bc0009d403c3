"""Gavel-format traces: fields, line numbers in errors."""
from pathlib import Path

import pytest

from scheduler.simulation.measurements import load_records, without_memory
from scheduler.simulation.trace import TraceError, parse_trace, trace_jobs
from scheduler.simulation.truth import Truth

TRACES = Path(__file__).resolve().parents[4] / "catalog" / "reference" / "gavel" / "traces"


def test_gavel_trace_gives_workload_steps_gpus_and_arrival():
    jobs = parse_trace(str(TRACES / "small_test.trace"))
    assert len(jobs) == 20
    assert jobs[0] == (1, "Transformer (batch size 128)", 346.0, 2, 0.0)
    assert jobs[1][1:] == ("Recommendation (batch size 8192)", 36.0, 1, 0.0)


def test_trace_jobs_get_a_t_min_and_keep_arrival_order():
    truth = Truth(without_memory(load_records(None)), seed=0)
    jobs = trace_jobs(str(TRACES / "small_test.trace"), truth, seed=0)
    assert len(jobs) == 20
    assert all(j.min_throughput > 0 for j in jobs)
    assert [j.arrival_s for j in jobs] == sorted(j.arrival_s for j in jobs)


@pytest.mark.parametrize("line, reason", [
    ("A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1", "expected 10 tab-separated fields, found 9"),
    ("A3C\tcmd\tdir\t-n\t1\tmany\t1\t1\t-1\t0", "must be numbers"),
    ("A3C\tcmd\tdir\t-n\t1\t100\t0\t1\t-1\t0", "scale_factor >= 1"),
])
def test_a_bad_line_is_reported_with_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.trace"
    path.write_text("A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t0\n\n" + line + "\n")
    with pytest.raises(TraceError) as caught:
        parse_trace(str(path))
    assert str(caught.value).startswith(f"{path}:3: ")
    assert reason in str(caught.value)


def test_a_workload_the_truth_cannot_run_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "unknown.trace"
    path.write_text("Nonexistent\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t0\n")
    with pytest.raises(TraceError, match=r"unknown.trace:1: no measured throughput of 'Nonexistent'"):
        trace_jobs(str(path), Truth(without_memory(load_records(None))), seed=0)


def test_a_byte_order_mark_is_not_part_of_the_first_workload(tmp_path):
    path = tmp_path / "bom.trace"
    path.write_text("\ufeffResNet-50 (batch size 64)\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t0\n", encoding="utf-8")
    assert parse_trace(str(path))[0][1] == "ResNet-50 (batch size 64)"


def test_an_arrival_past_the_horizon_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "late.trace"
    path.write_text("A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t31536000\n\nA3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\t31536001\n")
    beyond = r"late.trace:3: arrival_time_s 3.1536e\+07 is beyond the simulation's horizon"
    with pytest.raises(TraceError, match=beyond):
        parse_trace(str(path))
