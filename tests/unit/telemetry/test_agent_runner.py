"""Jobs as real subprocesses: environment, logs, progress, steps/s, and stopping."""
import shlex
import sys
import time

from telemetry.agent.runner import JobProcess


def python(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_job_runs_with_its_gpus_logs_and_reports_progress(tmp_path):
    code = (
        "import os, sys, time\n"
        "from telemetry.agent.progress import report\n"
        "print('gpus', os.environ['CUDA_VISIBLE_DEVICES'], os.environ['GOGH_JOB_ID'], os.environ['COLOUR'])\n"
        "print('oops', file=sys.stderr)\n"
        "for step in range(0, 21, 2):\n"
        "    report(step, total=20); time.sleep(0.05)\n"
    )
    job = JobProcess(job_id=42, command=python(code), environment={"COLOUR": "blue", "PYTHONPATH": "."},
                     gpu_indexes=[1, 3], log_dir=tmp_path)
    job.start()
    assert wait_for(lambda: job.exit_code() is not None)
    assert job.exit_code() == 0
    assert (job.steps, job.total) == (20, 20)
    assert 10 < job.steps_per_s() < 45  # 20 steps in about 0.5 s
    out = (tmp_path / "job-42.out").read_text()
    assert out.startswith("gpus 1,3 42 blue\n") and "GOGH_PROGRESS step=20 total=20" in out
    assert (tmp_path / "job-42.err").read_text() == "oops\n"


def test_a_failing_job_reports_its_status(tmp_path):
    job = JobProcess(job_id=1, command="echo starting; exit 3", environment={}, gpu_indexes=[0], log_dir=tmp_path)
    job.start()
    assert wait_for(lambda: job.exit_code() is not None)
    assert job.exit_code() == 3 and job.steps_per_s() is None


def test_stop_is_sigterm_then_sigkill_after_the_grace_period(tmp_path):
    stubborn = python(
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: print('got SIGTERM, ignoring it', flush=True))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    job = JobProcess(job_id=5, command=stubborn, environment={}, gpu_indexes=[0], log_dir=tmp_path)
    job.start()
    log = tmp_path / "job-5.out"
    assert wait_for(lambda: log.exists() and "ready" in log.read_text())
    started = time.monotonic()
    job.request_stop(grace_s=0.5)
    assert wait_for(lambda: "got SIGTERM" in log.read_text())
    job.tick()
    assert job.exit_code() is None  # still inside the grace period, still alive
    while job.exit_code() is None:
        job.tick()
        time.sleep(0.02)
        assert time.monotonic() - started < 10
    assert job.exit_code() == -9  # SIGKILL
    assert time.monotonic() - started >= 0.5


def test_a_job_that_honours_sigterm_ends_within_the_grace_period(tmp_path):
    job = JobProcess(job_id=6, command=python("import time; time.sleep(60)"), environment={}, gpu_indexes=[0],
                     log_dir=tmp_path)
    job.start()
    time.sleep(0.2)
    job.request_stop(grace_s=30)
    assert wait_for(lambda: job.exit_code() is not None, timeout=5)
    assert job.exit_code() == -15


def test_a_background_process_left_holding_stdout_does_not_hang_the_agent(tmp_path):
    job = JobProcess(job_id=7, command="sleep 60 & echo done", environment={}, gpu_indexes=[0], log_dir=tmp_path)
    job.start()
    started = time.monotonic()
    time.sleep(0.3)
    asked = time.monotonic()
    assert job.exit_code() is None  # the shell is done, its output not yet: wait, without blocking
    assert time.monotonic() - asked < 0.1
    assert wait_for(lambda: job.exit_code() is not None, timeout=10)
    assert job.exit_code() == 0 and 1.5 < time.monotonic() - started < 6
    assert (tmp_path / "job-7.out").read_text() == "done\n"
