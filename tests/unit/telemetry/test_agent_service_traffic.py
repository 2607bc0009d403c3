"""A service's traffic through the job contract: the GOGH_TRAFFIC line (contract and strict
parser), the runner keeping the latest one, and the agent sending it once with the job's next
progress report; a control plane that refuses it does not cost the job its progress reports."""
import io
import math

import pytest

from telemetry.agent import contract
from telemetry.agent.progress import MAX_P99_MS, MAX_RATE_RPS, parse_traffic
from telemetry.agent.runner import JobProcess

from .test_agent_loop import assignment, plane as plane, python, run_agent as run_agent
from .test_agent_runner import wait_for


@pytest.mark.parametrize(("rate", "p99"), [(12.5, 30.0), (0, None), (1e7, 0.123456), (1234567.0, 3.6e6), (3, 0)])
def test_a_traffic_line_reads_back_as_written(rate, p99):
    read = parse_traffic(contract.traffic_line(rate, p99))
    assert read[0] == pytest.approx(rate, rel=1e-5)
    assert read[1] == (None if p99 is None else pytest.approx(p99, rel=1e-5))


def test_the_contract_writes_one_flushed_line_and_refuses_what_the_agent_would_not_read():
    stream = io.StringIO()
    contract.Job(stream=stream).traffic(40, p99_ms=12.5)
    contract.Job(stream=stream).traffic(0)
    assert stream.getvalue() == "GOGH_TRAFFIC rate=40 p99_ms=12.5\nGOGH_TRAFFIC rate=0\n"
    for rate, p99 in ((-1, None), (math.nan, None), (math.inf, 3), (1, -0.1), (1, math.nan)):
        with pytest.raises(ValueError):
            contract.traffic_line(rate, p99)


@pytest.mark.parametrize("line", [
    "GOGH_TRAFFIC rate=-1", "GOGH_TRAFFIC rate=abc", "GOGH_TRAFFIC rate=1 p99_ms=", "GOGH_TRAFFIC rate=nan",
    "GOGH_TRAFFIC rate=inf", "GOGH_TRAFFIC rate=1e999", f"GOGH_TRAFFIC rate={MAX_RATE_RPS * 2:g}",
    f"GOGH_TRAFFIC rate=1 p99_ms={MAX_P99_MS * 2:g}", "GOGH_TRAFFIC  rate=1", "GOGH_TRAFFIC rate=1 p99=3",
    "gogh_traffic rate=1", "GOGH_TRAFFIC rate=1 p99_ms=3 extra=1", "GOGH_TRAFFIC rate=\u0663",
    "GOGH_TRAFFIC p99_ms=3 rate=1", "GOGH_TRAFFIC", "GOGH_TRAFFIC rate=.5", " GOGH_TRAFFIC rate=1",
])
def test_a_malformed_traffic_line_is_no_traffic(line):
    assert parse_traffic(line) is None


def test_the_runner_keeps_the_latest_traffic_until_taken_and_logs_every_line(tmp_path):
    lines = ["GOGH_TRAFFIC rate=5 p99_ms=9", "GOGH_TRAFFIC rate=-5", "GOGH_TRAFFIC rate=7.5", "GOGH_PROGRESS step=3"]
    process = JobProcess(job_id=1, command=python(f"print({chr(10).join(lines)!r}, flush=True)"), environment={},
                         gpu_indexes=[0], log_dir=tmp_path)
    process.start()
    assert wait_for(lambda: process.exit_code() is not None)
    assert process.take_traffic() == (7.5, None)  # the malformed line in between changed nothing
    assert process.take_traffic() is None  # reported once
    assert process.steps == 3
    assert (tmp_path / "job-1.out").read_text() == "".join(f"{line}\n" for line in lines)


SERVICE = """
import time
print("GOGH_TRAFFIC rate=12.5 p99_ms=30", flush=True)
for step in range(1, 16):
    print(f"GOGH_PROGRESS step={step}", flush=True)
    time.sleep(0.1)
print("GOGH_TRAFFIC rate=99", flush=True)
"""


def test_the_latest_traffic_goes_once_with_the_next_progress_report_and_never_with_the_end(plane, run_agent):
    plane.assignments = [assignment(1, python(SERVICE))]
    run_agent(plane)
    assert wait_for(lambda: any(report["status"] == "succeeded" for report in plane.progress), timeout=15)
    carried = [report["traffic"] for report in plane.progress if "traffic" in report]
    assert carried == [{"request_rate_rps": 12.5, "p99_ms": 30.0}]
    assert plane.progress[-1]["status"] == "succeeded"  # its last line came too late for a progress report
    assert sum(report["status"] == "running" for report in plane.progress) >= 3  # and most reports had none


REFUSED = """
import time
time.sleep(0.4)
for step in range(1, 31):
    print(f"GOGH_PROGRESS step={step}", flush=True)
    print(f"GOGH_TRAFFIC rate={step}", flush=True)
    time.sleep(0.1)
"""


def test_refused_traffic_is_not_sent_again_and_the_refused_progress_goes_again_at_once(plane, run_agent, caplog):
    """The report after the refused one is the same job's progress, without traffic: sent at once,
    not a progress interval later (by then the job has ended and its final report would come first)."""
    plane.refuses_traffic = True
    plane.assignments = [assignment(1, python(REFUSED))]
    run_agent(plane, progress_interval_s=2.0)
    assert wait_for(lambda: any(report["status"] == "succeeded" for report in plane.progress), timeout=15)
    sent = [report for batch in plane.progress_batches for report in batch if report["job"] == 1]
    with_traffic = [i for i, report in enumerate(sent) if "traffic" in report]
    assert len(with_traffic) == 1, sent
    resent = sent[with_traffic[0] + 1]
    assert resent["status"] == "running" and resent["steps"] >= sent[with_traffic[0]]["steps"]
    assert [report["status"] for report in plane.progress][-1] == "succeeded"
    assert "job 1: traffic refused" in caplog.text
