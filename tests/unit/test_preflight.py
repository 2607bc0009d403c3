"""`make test`'s preflight and the suite's own PostgreSQL check: a server that does not answer
stops the run at once with one line that says what to run, never minutes of tests and a
traceback per test. Closed ports on loopback stand in for stopped servers (the shared ones keep
running), and starting servers is disabled."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import preflight

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def closed_port():
    """A loopback port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(argv, **env) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    return done, time.monotonic() - began


def test_a_server_that_does_not_answer_stops_the_preflight_at_once_with_one_line(closed_port):
    done, seconds = run([sys.executable, "-m", "tests.preflight", "--no-start",
                         "--database", f"postgres://gogh:secret@127.0.0.1:{closed_port}/gogh",
                         "--redis", f"redis://127.0.0.1:{closed_port}/0", "--chromium", sys.executable,
                         "--sinfo", "/nonexistent/sinfo"])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"PostgreSQL is not answering on 127.0.0.1:{closed_port} (Connection refused); "
        f"Redis is not answering on 127.0.0.1:{closed_port} (Connection refused); "
        "Slurm is not installed (/nonexistent/sinfo not found): "
        "run `make services` (`bash .ci/services`, needs root) or set TEST_DATABASE_URL or TEST_REDIS_URL"
    ]
    assert "secret" not in done.stderr
    assert seconds < 10  # no waiting on connect timeouts; Python's start-up is most of it


def test_a_missing_chromium_is_named_with_its_path():
    assert preflight.chromium_problem("/nonexistent/chromium") == (
        "Chromium is not installed at /nonexistent/chromium (the browser tests drive it)"
    )
    assert preflight.chromium_problem(sys.executable) is None


def fake_sinfo(folder: Path, script: str) -> str:
    """An executable standing in for Slurm's sinfo (the edge the preflight calls)."""
    path = folder / "sinfo"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("script, problem", [
    ("printf 'n-k80\\nn-p100\\nn-v100\\n'", None),
    ("printf 'n-k80\\nn-v100\\n'", "Slurm does not list the test nodes n-p100"),
    ("echo 'sinfo: error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
     "Slurm is not answering (Unable to contact slurm controller (connect failure))"),
])
def test_slurm_must_list_the_three_test_nodes(tmp_path, script, problem):
    assert preflight.slurm_problem(fake_sinfo(tmp_path, script)) == problem


def test_a_slurm_that_hangs_is_named_within_its_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, "SLURM_TIMEOUT_S", 0.5)
    began = time.monotonic()
    assert preflight.slurm_problem(fake_sinfo(tmp_path, "exec sleep 30")) == (
        f"Slurm is not answering ({tmp_path / 'sinfo'} ran past 0.5 s)")
    assert time.monotonic() - began < 5


def test_a_missing_slurm_alone_says_to_run_the_services_script():
    assert preflight.one_line([("Slurm is not installed (sinfo not found)", "")], after_services=False) == (
        "Slurm is not installed (sinfo not found): run `make services` (`bash .ci/services`, needs root)")
    assert preflight.one_line([("Slurm is not installed (sinfo not found)", "")], after_services=True) == (
        "Slurm is not installed (sinfo not found), even after `make services` (its output is above): fix that")


@pytest.mark.parametrize("after_start", [[], [("Redis is not answering on 127.0.0.1:6379 (x)", "TEST_REDIS_URL")]])
def test_where_it_may_it_runs_make_services_and_checks_again(monkeypatch, capsys, after_start):
    missing = [("Redis is not answering on 127.0.0.1:6379 (Connection refused)", "TEST_REDIS_URL")]
    checks = iter([missing, after_start])
    started = []
    monkeypatch.setattr(preflight, "problems", lambda *args: next(checks))
    monkeypatch.setattr(preflight, "may_start_services", lambda: True)
    monkeypatch.setattr(preflight.subprocess, "run", lambda argv, **kwargs: started.append(argv))

    code = preflight.main(["--database", "postgres://127.0.0.1/gogh", "--redis", "redis://127.0.0.1:6379/0"])

    assert started == [["bash", str(ROOT / ".ci" / "services")]]
    out, err = capsys.readouterr()
    assert "running `make services`" in out
    if after_start:
        assert code == 1 and err.splitlines() == [
            "Redis is not answering on 127.0.0.1:6379 (x), even after `make services` (its output is above): "
            "fix that, or set TEST_REDIS_URL"
        ]
    else:
        assert code == 0 and err == ""


def test_the_suite_itself_stops_with_one_line_when_its_postgresql_does_not_answer(closed_port):
    done, _ = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_pure_core.py"],
                  DATABASE_URL=f"postgres://gogh:gogh@127.0.0.1:{closed_port}/gogh")
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "no tests ran" in output and "Traceback" not in output
    expected = (f"PostgreSQL is not answering on 127.0.0.1:{closed_port} (Connection refused): "
                "run `make services` (needs root) or set DATABASE_URL")
    assert [line for line in output.splitlines() if "PostgreSQL" in line] == [f"! _pytest.outcomes.Exit: {expected} !"]
