"""The whole agent (fake NVML, real job subprocesses) against a stand-in control plane on a
real local HTTP server: registration, sampling rate, job progress and steps/s, cancel with
SIGTERM then SIGKILL, buffering across an outage, and a clean leave."""
import argparse
import os
import shlex
import sys
import threading
import time
from datetime import datetime

import pynvml
import pytest
from django.core.management import call_command

from telemetry.agent import cli
from telemetry.agent.agent import Agent, RegistrationRefused
from telemetry.agent.client import ControlPlane
from telemetry.agent.config import AgentConfig
from telemetry.agent.nvml import NvmlBackend

from .fake_control_plane import FakeControlPlane
from .fake_nvml import fake_nvml
from .test_agent_runner import wait_for


@pytest.fixture
def plane():
    plane = FakeControlPlane().start()
    yield plane
    try:
        plane.stop()
    except Exception:  # already stopped by the test
        pass


@pytest.fixture
def run_agent(tmp_path):
    """run_agent(plane, **config) -> agent running in a thread; stopped at teardown."""
    started = []

    def start(plane, token="agent-token", gpus=2, nvml=None, **overrides):
        config = {
            "hostname": "gpu-node-1", "log_dir": tmp_path / "logs", "sample_interval_s": 0.5,
            "upload_interval_s": 0.3, "heartbeat_interval_s": 0.5, "poll_interval_s": 0.2,
            "progress_interval_s": 0.3, "grace_s": 0.5, "retry_s": 0.2, **overrides,
        }
        agent = Agent(backend=NvmlBackend(nvml=nvml or fake_nvml(count=gpus)),
                      client=ControlPlane(plane.url, token, timeout=2), config=AgentConfig(**config))
        agent.errors = []

        def target():
            try:
                agent.run()
            except Exception as exc:  # surfaced by the test
                agent.errors.append(exc)

        agent.thread = threading.Thread(target=target, daemon=True)
        agent.thread.start()
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()
        agent.thread.join(timeout=15)


def python(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def assignment(job_id, command, gpu_indexes=(0,), allocations=None, **fields):
    return {
        "job": job_id, "state": "placed", "allocations": allocations or [100 + job_id],
        "gpu_indexes": list(gpu_indexes), "gpu_type": "v100", "workload": "ResNet-50 (batch size 64)", "partners": [],
        "command": command,
        "environment": {"PYTHONPATH": os.getcwd()}, "total_steps": None, "steps_done": 0,
        "resume_step": 0, "resume_checkpoint": "", "preemption_grace_s": 1, **fields,
    }


def assignment_before_the_contract(job_id, command, **fields):
    """As a control plane from before the job contract lists it: no resume_step, no grace."""
    item = assignment(job_id, command, **fields)
    for key in ("resume_step", "resume_checkpoint", "preemption_grace_s"):
        item.pop(key)
    return item


def timestamps(plane, uuid):
    return sorted(datetime.fromisoformat(s["ts"]).timestamp() for s in plane.samples if s["gpu"] == uuid)


def test_registers_heartbeats_and_samples_every_gpu_at_1_hz(plane, run_agent):
    agent = run_agent(plane, sample_interval_s=1.0)
    assert wait_for(lambda: len(timestamps(plane, "GPU-fake-1")) >= 4, timeout=10)
    report = plane.registrations[0]
    assert report["hostname"] == "gpu-node-1"
    assert [gpu["uuid"] for gpu in report["gpus"]] == ["GPU-fake-0", "GPU-fake-1"]
    assert report["gpus"][0]["product_name"] == "Tesla V100-SXM2-16GB" and report["gpus"][0]["memory_gb"] == 16
    assert plane.heartbeats >= 1
    for uuid in ("GPU-fake-0", "GPU-fake-1"):
        stamps = timestamps(plane, uuid)
        assert (len(stamps) - 1) / (stamps[-1] - stamps[0]) >= 0.95  # >= 1 Hz, allowing timer jitter
        assert max(b - a for a, b in zip(stamps, stamps[1:])) < 1.3
    sample = next(s for s in plane.samples if s["gpu"] == "GPU-fake-1")
    assert sample["power_w"] == 151.0 and sample["utilization"] == 0.51 and sample["retired_pages"] == 1
    agent.stop()
    agent.thread.join(timeout=10)
    assert plane.left and not agent.errors


def test_runs_a_job_and_reports_progress_steps_per_s_and_success(plane, run_agent, tmp_path):
    code = (
        "import os, time\n"
        "from telemetry.agent.progress import report\n"
        "print('devices', os.environ['CUDA_VISIBLE_DEVICES'], flush=True)\n"
        "for step in range(0, 41, 4):\n"
        "    report(step, total=40); time.sleep(0.1)\n"
    )
    plane.assignments = [assignment(1, python(code), gpu_indexes=(0, 1))]
    run_agent(plane)
    assert wait_for(lambda: any(p["status"] == "succeeded" for p in plane.progress), timeout=15)
    reports = [p for p in plane.progress if p["job"] == 1]
    assert reports[0]["status"] == "running" and reports[0]["steps"] == 0
    final = reports[-1]
    assert final["status"] == "succeeded" and final["exit_code"] == 0
    assert (final["steps"], final["total_steps"]) == (40, 40)
    assert 20 < final["steps_per_s"] < 60  # 40 steps in about a second
    assert (tmp_path / "logs" / "job-1.out").read_text().startswith("devices 0,1\n")
    time.sleep(0.5)  # still listed (the fake never closes allocations): not started again
    assert sum(1 for p in plane.progress if p["status"] == "succeeded") == 1


def test_a_failing_job_is_reported_failed(plane, run_agent):
    plane.assignments = [assignment(2, "echo 'no such model' >&2; exit 3")]
    run_agent(plane)
    assert wait_for(lambda: any(p["status"] == "failed" for p in plane.progress), timeout=10)
    final = plane.progress[-1]
    assert final["exit_code"] == 3 and "status 3" in final["message"]


def test_a_withdrawn_allocation_stops_the_job_sigterm_then_sigkill(plane, run_agent, tmp_path):
    stubborn = python(
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: print('SIGTERM ignored', flush=True))\n"
        "print('pid', os.getpid(), flush=True)\n"
        "time.sleep(60)\n"
    )
    plane.assignments = [assignment(3, stubborn, preemption_grace_s=2)]
    run_agent(plane, grace_s=0.5)  # the job's own grace period counts, not the agent's
    log = tmp_path / "logs" / "job-3.out"
    assert wait_for(lambda: log.exists() and "pid" in log.read_text())
    pid = int(log.read_text().split()[1])
    plane.assignments = []  # cancelled, preempted or migrated away
    withdrawn = time.monotonic()
    assert wait_for(lambda: "SIGTERM ignored" in log.read_text(), timeout=5)
    assert wait_for(lambda: not _alive(pid), timeout=10)
    assert time.monotonic() - withdrawn >= 2.0  # it survived its grace period, then SIGKILL
    assert wait_for(lambda: plane.progress[-1]["status"] == "preempted", timeout=5)
    running, stopped = [p for p in plane.progress if p["job"] == 3]
    assert running["status"] == "running" and (running["checkpoint_step"], running["checkpoint_path"]) == (None, "")
    assert (stopped["exit_code"], stopped["steps"], stopped["checkpoint_step"]) == (-9, 0, None)


def test_a_control_plane_before_the_contract_gets_the_reports_it_knows(plane, run_agent, tmp_path):
    """No checkpoint fields, no "preempted" report (it would refuse both), --grace-period, and
    exit status 75 is a failure as any other."""
    stubborn = python("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
                      "time.sleep(60)")
    plane.assignments = [assignment_before_the_contract(3, stubborn),
                         assignment_before_the_contract(4, "echo preempted; exit 75")]
    agent = run_agent(plane, grace_s=0.5)
    log = tmp_path / "logs" / "job-3.out"
    assert wait_for(lambda: log.exists() and "up" in log.read_text())
    assert wait_for(lambda: any(p["status"] == "failed" for p in plane.progress), timeout=5)
    plane.assignments = []
    withdrawn = time.monotonic()
    assert wait_for(lambda: not agent._running and not agent._stopping, timeout=10)
    assert time.monotonic() - withdrawn < 5  # SIGKILL after --grace-period, not a minute
    time.sleep(0.5)  # a report would go on the next turn
    assert {p["status"] for p in plane.progress if p["job"] == 3} == {"running"}
    assert [p["exit_code"] for p in plane.progress if p["status"] == "failed"] == [75]
    assert not any("checkpoint_step" in p or "checkpoint_path" in p for p in plane.progress)


def test_a_moved_allocation_restarts_the_job_on_its_new_gpus(plane, run_agent, tmp_path):
    command = python("import os, time; print(os.environ['CUDA_VISIBLE_DEVICES'], flush=True); time.sleep(60)")
    plane.assignments = [assignment(4, command, gpu_indexes=(0,), allocations=[10])]
    run_agent(plane)
    log = tmp_path / "logs" / "job-4.out"
    assert wait_for(lambda: log.exists() and log.read_text() == "0\n")
    plane.assignments = [assignment(4, command, gpu_indexes=(1,), allocations=[11])]
    assert wait_for(lambda: log.read_text() == "0\n1\n")


def test_new_allocations_on_the_same_gpus_leave_the_job_running(plane, run_agent, tmp_path):
    """Its partner on the GPU changed (new allocation rows), its GPUs did not: no restart."""
    command = python("import time; print('started', flush=True); time.sleep(60)")
    plane.assignments = [assignment(5, command, gpu_indexes=(0,), allocations=[20])]
    agent = run_agent(plane)
    log = tmp_path / "logs" / "job-5.out"
    assert wait_for(lambda: log.exists() and log.read_text() == "started\n")
    pid = agent._running[5][1].pid
    plane.assignments = [assignment(5, command, gpu_indexes=(0,), allocations=[21])]
    time.sleep(1.5)  # several polls
    assert log.read_text() == "started\n" and agent._running[5][1].pid == pid


def test_a_job_placed_anew_on_the_same_gpus_is_restarted(plane, run_agent, tmp_path):
    """Preempted and placed again between two polls, or migrated on another node of a spread job."""
    command = python("import time; print('started', flush=True); time.sleep(60)")
    plane.assignments = [assignment(7, command, allocations=[40], placed_at="2026-11-30T10:00:00+00:00")]
    run_agent(plane)
    log = tmp_path / "logs" / "job-7.out"
    assert wait_for(lambda: log.exists() and log.read_text() == "started\n")
    plane.assignments = [assignment(7, command, allocations=[41], placed_at="2026-11-30T10:05:00+00:00")]
    assert wait_for(lambda: log.read_text() == "started\nstarted\n")


def test_a_simulated_job_follows_its_partner_changes_without_a_restart(plane, run_agent, tmp_path):
    partner, joiner = "ResNet-18 (batch size 64)", "ResNet-18 (batch size 32)"
    plane.assignments = [assignment(6, "", allocations=[30], partners=[partner], total_steps=100_000)]
    agent = run_agent(plane, simulate_seed=0)
    log, partner_file = tmp_path / "logs" / "job-6.out", tmp_path / "logs" / "job-6.partner"
    assert wait_for(lambda: log.exists() and f"with {partner}:" in log.read_text())
    pid = agent._running[6][1].pid
    plane.assignments = [
        assignment(6, "", allocations=[31], partners=[joiner, partner], total_steps=100_000)
    ]  # a third job
    assert wait_for(lambda: f"with {joiner}, {partner}:" in log.read_text())
    assert partner_file.read_text() == f"{joiner}\n{partner}\n"  # one workload per line
    plane.assignments = [assignment(6, "", allocations=[32], partners=[], total_steps=100_000)]  # both ended
    assert wait_for(lambda: "on 1 x v100: " in log.read_text())  # now at its rate alone
    assert agent._running[6][1].pid == pid and partner_file.read_text() == ""


def test_samples_are_buffered_across_an_outage_and_none_is_lost(plane, run_agent):
    agent = run_agent(plane, sample_interval_s=0.2, buffer_size=1000)
    assert wait_for(lambda: len(plane.samples) >= 4)
    plane.stop()
    outage_started = time.time()
    time.sleep(1.5)
    before_restart = len(plane.samples)
    plane.start()
    assert wait_for(lambda: any(datetime.fromisoformat(s["ts"]).timestamp() > outage_started + 1.4
                                for s in plane.samples[before_restart:]), timeout=10)
    for uuid in ("GPU-fake-0", "GPU-fake-1"):
        stamps = timestamps(plane, uuid)
        assert max(b - a for a, b in zip(stamps, stamps[1:])) < 0.6  # no hole where the outage was
        assert len(stamps) == len(set(stamps))
    assert agent.buffer.dropped == 0 and set(plane.dropped_reports) == {0}


def test_a_full_buffer_drops_the_oldest_and_says_so(plane, run_agent):
    agent = run_agent(plane, sample_interval_s=0.1, buffer_size=6)
    assert wait_for(lambda: len(plane.samples) >= 2)
    plane.stop()
    time.sleep(1.2)  # about 24 samples of 2 GPUs into 6 places
    restart = time.time()
    plane.start()
    assert wait_for(lambda: plane.dropped_reports and plane.dropped_reports[-1] > 10, timeout=10)
    assert agent.buffer.dropped > 10
    recent = [s for s in plane.samples if datetime.fromisoformat(s["ts"]).timestamp() < restart]
    assert recent  # the newest samples of the outage arrived


def test_an_agent_started_before_the_control_plane_registers_when_it_appears(run_agent):
    plane = FakeControlPlane()
    agent = run_agent(plane)
    time.sleep(0.5)
    plane.start()
    assert wait_for(lambda: plane.registrations and plane.samples, timeout=10)
    assert agent.node_id == 7


def test_a_refused_registration_stops_the_agent(plane, run_agent):
    agent = run_agent(plane, token="wrong")
    agent.thread.join(timeout=10)
    assert isinstance(agent.errors[0], RegistrationRefused) and "401" in str(agent.errors[0])


def test_without_a_driver_the_command_says_so_in_one_line(monkeypatch, capsys):
    no_driver = NvmlBackend(nvml=fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    monkeypatch.setattr(cli, "_nvml_backend", lambda: no_driver)
    assert cli.main(["--url", "http://127.0.0.1:9", "--token", "t"]) == cli.EXIT_NO_DRIVER
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NVML" in err and "--simulate" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--token", "t"], "URL"),
        (["--url", "http://x"], "token"),
        (["--url", "http://x", "--token", "t", "--sample-interval", "2"], "1 Hz"),
        (["--url", "http://x", "--token", "t", "--label", "rack"], "KEY=VALUE"),
        (["--url", "http://x", "--token", "t", "--throughputs", "gavel.json"], "--throughputs needs --simulate"),
        (["--url", "http://x", "--token", "t", "--simulate", "--throughputs", "/nonexistent/gavel.json"],
         "no file /nonexistent/gavel.json"),
    ],
)
def test_bad_flags_get_one_line(argv, message, capsys, monkeypatch):
    for name in ("GOGH_AGENT_URL", "GOGH_AGENT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(argv)) == cli.EXIT_USAGE
    assert message in capsys.readouterr().err


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone: the agent has not reaped it yet, but it no longer runs;
    # the agent may reap it between the signal and the read (ENOENT or ESRCH)
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_out_of_touch_past_the_timeout_the_agent_stops_its_jobs(plane, run_agent, tmp_path):
    plane.assignments = [assignment(8, python("import time; print('up', flush=True); time.sleep(60)"))]
    agent = run_agent(plane, fence_after_s=2.0)  # jobs gone 2 s after the last heartbeat: SIGTERM at 1.5 s
    log = tmp_path / "logs" / "job-8.out"
    assert wait_for(lambda: log.exists() and "up" in log.read_text())
    time.sleep(1.2)
    assert agent._running  # in touch: the job runs on
    plane.stop()
    assert wait_for(lambda: not agent._running and not agent._stopping, timeout=10)


def test_a_refused_heartbeat_is_logged_and_the_agent_keeps_sampling(plane, run_agent, caplog):
    agent = run_agent(plane)
    assert wait_for(lambda: plane.samples)
    plane.node_deleted = True
    heard = len(plane.samples)
    assert wait_for(lambda: len(plane.samples) > heard + 2, timeout=10)
    assert agent.thread.is_alive() and not agent.errors
    assert "refused the heartbeat" in caplog.text


def test_a_job_without_a_command_fails_at_once(plane, run_agent):
    plane.assignments = [assignment(9, "  ")]
    run_agent(plane)
    assert wait_for(lambda: plane.progress, timeout=10)
    assert plane.progress[0]["status"] == "failed" and plane.progress[0]["message"] == "The job has no command."


def test_manage_py_run_agent_is_the_same_program(monkeypatch, capsys):
    no_driver = NvmlBackend(nvml=fake_nvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    monkeypatch.setattr(cli, "_nvml_backend", lambda: no_driver)
    with pytest.raises(SystemExit) as exit_:
        call_command("run_agent", "--url", "http://127.0.0.1:9", "--token", "t")
    assert exit_.value.code == cli.EXIT_NO_DRIVER
    assert "Driver Not Loaded" in capsys.readouterr().err


def test_a_lost_gpu_is_reported_once_and_its_job_stopped_not_restarted(plane, run_agent, tmp_path):
    nvml = fake_nvml(count=2)
    command = python("import os, time; print('pid', os.getpid(), flush=True); time.sleep(60)")
    plane.assignments = [assignment(6, command, gpu_indexes=(1,))]
    run_agent(plane, nvml=nvml)
    log = tmp_path / "logs" / "job-6.out"
    assert wait_for(lambda: log.exists() and "pid" in log.read_text())
    pid = int(log.read_text().split()[1])
    nvml.lost.add(1)  # GPU 1 falls off the bus; the control plane has not moved the job yet
    assert wait_for(lambda: plane.gpu_failures, timeout=5)
    assert wait_for(lambda: not _alive(pid), timeout=10)
    lost_at = time.time()
    assert wait_for(lambda: timestamps(plane, "GPU-fake-0")[-1] > lost_at + 1, timeout=10)  # sampling goes on
    [failure] = plane.gpu_failures
    assert failure["uuid"] == "GPU-fake-1" and "GPU is lost" in failure["reason"]
    assert log.read_text().count("pid") == 1  # still assigned, never started again on a dead GPU
    assert timestamps(plane, "GPU-fake-1")[-1] <= lost_at
    assert wait_for(lambda: any(p["status"] == "preempted" for p in plane.progress), timeout=5)
    (stop,) = [p for p in plane.progress if p["status"] == "preempted"]
    assert stop["message"].startswith("Stopped by the agent: its GPU failed (exit status ")
