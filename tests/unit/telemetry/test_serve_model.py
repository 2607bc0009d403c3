"""The project's real service (telemetry.agent.serve_model: a PyTorch model over loopback HTTP,
batched, reporting its traffic through the contract) and its open-loop load generator."""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from telemetry.agent import load_generator, serve_model
from telemetry.agent.contract import PREEMPTED_EXIT_CODE
from telemetry.agent.progress import parse, parse_traffic

from .test_agent_runner import wait_for


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_traffic_window_measures_rate_and_p99_over_its_last_seconds():
    clock = Clock()
    window = serve_model.TrafficWindow(10, clock=clock)
    assert window.traffic() == (0.0, None)
    clock.now += 2
    for latency in range(1, 101):  # 100 answers in the first 2 s: 50 per second, not 10
        window.note(float(latency))
    assert window.traffic() == (50.0, 99.0)
    clock.now += 9
    window.note(500.0)
    assert window.traffic() == (10.1, 100.0)  # 101 answers over a whole window; P99 nearest rank
    clock.now += 5  # the first 100 fell out of the window
    assert window.traffic() == (0.1, 500.0)


def test_poisson_arrivals_come_at_the_rate_asked_and_the_same_seed_gives_the_same_load():
    times = load_generator.arrivals(50, 200, random.Random(3))
    assert times == sorted(times) and 0 < times[0] and times[-1] < 200
    assert len(times) / 200 == pytest.approx(50, rel=0.03)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert sum(gap > 0.06 for gap in gaps) / len(gaps) == pytest.approx(0.0498, abs=0.01)  # exp(-50 x 0.06)
    assert load_generator.arrivals(50, 200, random.Random(3)) == times


@pytest.mark.parametrize(("argv", "problem"), [
    (["--rate", "0", "--duration-s", "1", "--url", "http://127.0.0.1:1/"], "--rate: 0 is not above 0"),
    (["--rate", "nan", "--duration-s", "1", "--url", "http://127.0.0.1:1/"], "--rate: nan is not above 0"),
    (["--rate", "1", "--duration-s", "x", "--url", "http://127.0.0.1:1/"], "--duration-s: 'x' is not a number"),
    (["--rate", "1", "--duration-s", "1", "--url", "ftp://host/"], "--url: 'ftp://host/' is not an http://"),
    (["--rate", "1", "--duration-s", "1"], "the following arguments are required: --url"),
])
def test_the_load_generator_refuses_bad_arguments_saying_which(argv, problem, capsys):
    with pytest.raises(SystemExit) as exited:
        load_generator.main(argv)
    assert exited.value.code == 2 and problem in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "environ", "problem"), [
    (["--port", "70000"], {}, "--port: 70000 is not a port number"),
    (["--batch-size", "0"], {}, "--batch-size: 0 is not above 0"),
    ([], {"GOGH_SERVICE_PORT": "http"}, "GOGH_SERVICE_PORT: 'http' is not a port number"),
])
def test_the_service_refuses_bad_arguments_saying_which(argv, environ, problem, capsys, monkeypatch):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        serve_model.main(argv)
    assert exited.value.code == 2 and problem in capsys.readouterr().err


def test_the_load_generator_counts_what_no_service_answered(capsys):
    with socket.socket() as sock:  # bound, never listening: every connection is refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/predict"
        assert load_generator.main(["--url", url, "--rate", "20", "--duration-s", "0.5"]) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["sent"] == summary["failed"] > 0 and summary["answered"] == 0 and summary["p99_ms"] is None
    assert f"{summary['failed']} of {summary['sent']} requests failed, the first: " in err


@pytest.fixture
def service(tmp_path):
    """serve_model as a subprocess on a free port, its stdout lines collected."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "telemetry.agent.serve_model", "--port", "0", "--batch-size", "4", "--hidden", "32",
         "--features", "8", "--report-interval-s", "0.3", "--window-s", "2", "--device", "cpu"],
        stdout=subprocess.PIPE, stderr=open(tmp_path / "err", "w"), text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stdout), daemon=True).start()
    assert wait_for(lambda: any(line.startswith("serving on ") for line in lines), timeout=60), (tmp_path / "err")
    base = lines[0].split()[2]
    yield proc, base, lines
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_the_service_batches_answers_and_reports_progress_and_traffic_then_stops_on_sigterm(service):
    proc, base, lines = service
    health = json.loads(urllib.request.urlopen(f"{base}/health").read())
    assert health == {"ready": True, "batch_size": 4, "features": 8, "device": "cpu"}
    answer = _post(f"{base}/predict", {"inputs": [0.5] * 8})
    assert len(answer["outputs"]) == 10 and 1 <= answer["batch"] <= 4 and answer["latency_ms"] > 0
    for body, reason in (({"inputs": [1, 2]}, "inputs: a list of 8 finite numbers."), ([1], "a JSON object")):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(f"{base}/predict", body)
        assert refused.value.code == 400 and reason in json.loads(refused.value.read())["error"]

    summary = load_generator.run(f"{base}/predict", rate=60, duration_s=2, seed=1, workers=16, timeout_s=10)
    assert summary["answered"] == summary["sent"] > 60 and summary["failed"] == 0 and summary["p99_ms"] > 0
    assert wait_for(lambda: any((parse_traffic(line) or (0,))[0] > 30 for line in lines), timeout=5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == PREEMPTED_EXIT_CODE
    assert wait_for(lambda: lines[-1].startswith("stopped after step "), timeout=5), lines[-3:]
    steps = [parse(line)[0] for line in lines if parse(line)]
    assert steps == list(range(1, len(steps) + 1))  # one step a batch, counted from the resume step (0)
    assert lines[-1] == f"stopped after step {steps[-1]}"
    assert (summary["sent"] + 1) / 4 <= len(steps) <= summary["sent"] + 1  # batches of 1 to 4 requests
    busy = [traffic for traffic in map(parse_traffic, lines) if traffic and traffic[0] > 0]
    assert busy and all(p99 is not None and p99 > 0 for _, p99 in busy)


def _post(url: str, body) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=10).read())


def test_a_service_that_cannot_listen_says_why_and_exits_1():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "telemetry.agent.serve_model", "--device", "cpu", "--hidden", "8"],
            capture_output=True, text=True, timeout=60, env={**os.environ, "GOGH_SERVICE_PORT": str(port)},
        )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"serve_model: cannot listen on 127.0.0.1:{port}: ") and done.stderr.count("\n") == 1
