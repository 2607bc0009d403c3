"""The agent under a slow or busy control plane: heartbeats from their own thread whatever the
main loop waits on, a sample flush bounded per turn, one job-report request a turn with each
report answered on its own, Retry-After honoured without dropping a sample, and a fence that
counts only successful heartbeats and follows the control plane's fence time."""
import argparse
import math
import time

import pytest

from telemetry.agent import cli
from telemetry.agent.agent import Agent
from telemetry.agent.client import ControlPlane, RetryLater, Unreachable, retry_after_s
from telemetry.agent.config import AgentConfig
from telemetry.agent.gpus import GpuSample
from telemetry.agent.nvml import NvmlBackend

from .fake_control_plane import NODE_ID
from .fake_nvml import fake_nvml

# plane and run_agent are fixtures: `as` marks them re-exported.
from .test_agent_loop import _alive, assignment, plane as plane, python, run_agent as run_agent, timestamps
from .test_agent_runner import wait_for

LONG_JOB = python("import os, time; print('pid', os.getpid(), flush=True); time.sleep(60)")


def gaps(times):
    return [b - a for a, b in zip(times, times[1:])]


def test_heartbeats_go_on_while_sample_uploads_are_slow(plane, run_agent):
    plane.delays["/api/telemetry/samples/"] = 2.5  # every upload takes 2.5 s
    run_agent(plane, heartbeat_interval_s=0.2, sample_interval_s=0.2, batch_size=2, fence_after_s=30)
    assert wait_for(lambda: len(plane.sample_attempts) >= 3, timeout=20)
    beats = [t for t in plane.heartbeat_times if t >= plane.sample_attempts[0]]
    assert len(beats) >= 15 and max(gaps(beats)) < 1.5  # the main loop sat in uploads all along


def test_a_flush_uploads_for_at_most_its_budget(plane, tmp_path):
    """A backlog is worked off a budget a turn (at least one batch), so the loop gets back to its jobs."""
    agent = Agent(backend=NvmlBackend(nvml=fake_nvml()), client=ControlPlane(plane.url, "agent-token"),
                  config=AgentConfig(hostname="gpu-node-1", log_dir=tmp_path, batch_size=5))
    agent.buffer.extend(GpuSample(uuid="GPU-fake-0", ts=1.7e9 + i) for i in range(50))
    agent.flush(budget_s=0)
    assert len(plane.samples) == 5 and len(agent.buffer) == 45
    agent.flush(budget_s=60)
    assert len(plane.samples) == 50 and len(agent.buffer) == 0


def test_samples_go_without_health_signals_to_a_control_plane_from_before_them(plane, tmp_path):
    """It refuses them as unknown fields (400): the agent sends the same batch again without them,
    and every later one too; nothing is lost."""
    plane.sample_fields_unknown = {"throttle_reasons", "remapped_rows"}
    agent = Agent(backend=NvmlBackend(nvml=fake_nvml()), client=ControlPlane(plane.url, "agent-token"),
                  config=AgentConfig(hostname="gpu-node-1", log_dir=tmp_path, batch_size=5))
    agent.buffer.extend(GpuSample(uuid="GPU-fake-0", ts=1.7e9 + i, power_w=100.0, throttle_reasons=4) for i in range(8))
    agent.flush(budget_s=60)
    assert len(plane.samples) == 8 and agent.rejected_samples == 0 and len(agent.buffer) == 0
    assert len(plane.sample_attempts) == 3  # the first batch refused, then sent again; then the second
    assert all("throttle_reasons" not in s and s["power_w"] == 100.0 for s in plane.samples)


def test_only_the_health_signals_a_control_plane_refused_are_left_out(plane, tmp_path):
    """One that knows the throttle reasons but not the maximum SM clock still gets the reasons."""
    plane.sample_fields_unknown = {"sm_clock_max_mhz"}
    agent = Agent(backend=NvmlBackend(nvml=fake_nvml()), client=ControlPlane(plane.url, "agent-token"),
                  config=AgentConfig(hostname="gpu-node-1", log_dir=tmp_path, batch_size=5))
    agent.buffer.extend(GpuSample(uuid="GPU-fake-0", ts=1.7e9 + i, throttle_reasons=0x40, sm_clock_max_mhz=1530.0)
                        for i in range(3))
    agent.flush(budget_s=60)
    assert len(plane.samples) == 3 and agent.rejected_samples == 0
    assert all("sm_clock_max_mhz" not in s and s["throttle_reasons"] == 0x40 for s in plane.samples)


def test_a_batch_refused_for_another_field_is_still_dropped(plane, tmp_path):
    plane.sample_fields_unknown = {"power_w"}
    agent = Agent(backend=NvmlBackend(nvml=fake_nvml()), client=ControlPlane(plane.url, "agent-token"),
                  config=AgentConfig(hostname="gpu-node-1", log_dir=tmp_path, batch_size=5))
    agent.buffer.extend(GpuSample(uuid="GPU-fake-0", ts=1.7e9 + i, power_w=100.0) for i in range(5))
    agent.flush(budget_s=60)
    assert plane.samples == [] and agent.rejected_samples == 5 and len(agent.buffer) == 0


def test_all_jobs_report_in_one_request_a_turn(plane, run_agent):
    plane.assignments = [assignment(job, LONG_JOB, gpu_indexes=(job % 2,)) for job in (1, 2, 3)]
    run_agent(plane, progress_interval_s=0.5)
    assert wait_for(lambda: any({r["job"] for r in batch} == {1, 2, 3} for batch in plane.progress_batches), timeout=15)
    assert wait_for(lambda: len(plane.progress_batches) >= 4, timeout=15)
    assert all(len({r["job"] for r in batch}) == len(batch) for batch in plane.progress_batches)
    assert not any(r.get("status") != "running" for batch in plane.progress_batches for r in batch)


def test_one_jobs_409_does_not_refuse_the_others_and_a_final_report_waits_until_delivered(plane, run_agent):
    quick = python("from telemetry.agent.progress import report; report(10, total=10)")
    plane.assignments = [assignment(1, LONG_JOB), assignment(2, quick, gpu_indexes=(1,))]
    plane.progress_status = {1: 409, 2: 503}  # job 1 moved away; job 2's end not taken yet
    run_agent(plane, progress_interval_s=0.3, retry_s=0.2)
    assert wait_for(lambda: sum(1 for b in plane.progress_batches for r in b if r["status"] == "succeeded") >= 3,
                    timeout=15)  # offered again turn after turn
    assert not any(r["status"] == "succeeded" for r in plane.progress)
    del plane.progress_status[2]
    assert wait_for(lambda: any(r["status"] == "succeeded" for r in plane.progress), timeout=10)
    time.sleep(1)
    assert [r["job"] for r in plane.progress if r["status"] == "succeeded"] == [2]  # delivered once
    assert not any(r["job"] == 1 for r in plane.progress)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured_no_sample_is_dropped_and_heartbeats_go_on(plane, run_agent, status):
    plane.busy["/api/telemetry/samples/"] = (status, "1.5")
    agent = run_agent(plane, sample_interval_s=0.2, upload_interval_s=0.2, buffer_size=1000)
    assert wait_for(lambda: len(plane.sample_attempts) >= 3, timeout=15)
    attempts = list(plane.sample_attempts)
    assert min(gaps(attempts)) >= 1.4  # not before Retry-After, though due every 0.2 s
    assert len([t for t in plane.heartbeat_times if t > attempts[0]]) >= 4  # heartbeats went on meanwhile
    assert agent.rejected_samples == 0 and not plane.samples
    cleared = time.time()
    del plane.busy["/api/telemetry/samples/"]
    assert wait_for(lambda: timestamps(plane, "GPU-fake-0") and timestamps(plane, "GPU-fake-0")[-1] > cleared + 0.5,
                    timeout=15)
    for uuid in ("GPU-fake-0", "GPU-fake-1"):
        stamps = timestamps(plane, uuid)
        assert max(gaps(stamps)) < 0.6 and len(stamps) == len(set(stamps))  # nothing lost while it waited
    assert agent.rejected_samples == 0 and agent.buffer.dropped == 0


def test_only_a_successful_heartbeat_counts_and_the_control_planes_fence_time_wins(plane, run_agent, tmp_path):
    plane.heartbeat_answer = {"state": "ready", "heartbeat_timeout_s": 5, "fence_after_s": 3.0}
    plane.assignments = [assignment(8, LONG_JOB)]
    agent = run_agent(plane, fence_after_s=60, grace_s=0.5, heartbeat_interval_s=0.3)  # its own: a minute
    log = tmp_path / "logs" / "job-8.out"
    assert wait_for(lambda: log.exists() and "pid" in log.read_text())
    pid = int(log.read_text().split()[1])
    time.sleep(2)
    assert _alive(pid)  # in touch: it runs on
    plane.heartbeat_status = 503  # polls, reports and uploads still succeed
    lost = time.monotonic()
    assert wait_for(lambda: not _alive(pid), timeout=10)
    assert time.monotonic() - lost < 5  # gone before the control plane's 5 s timeout
    assert not agent._running and plane.samples and plane.assignments


def test_assignments_asked_for_before_contact_resumed_are_not_acted_upon(plane, tmp_path):
    client = ControlPlane(plane.url, "agent-token")
    agent = Agent(backend=NvmlBackend(nvml=fake_nvml()), client=client,
                  config=AgentConfig(hostname="gpu-node-1", log_dir=tmp_path, fence_after_s=5, grace_s=0.5))
    agent.backend.open()
    agent.node_id = NODE_ID
    plane.assignments = [assignment(9, LONG_JOB)]
    agent._last_contact = time.monotonic() - 10
    agent._fence(time.monotonic())
    asked = client.assignments

    def answered_after_a_heartbeat_got_through(node_id):
        listed = asked(node_id)  # the control plane may have moved job 9 since it read this
        agent._heard(time.monotonic(), {"fence_after_s": 5})
        return listed

    client.assignments = answered_after_a_heartbeat_got_through
    agent._poll()
    assert not agent._running  # stale: not started
    client.assignments = asked
    agent._poll()
    try:
        assert list(agent._running) == [9]
    finally:
        agent._stop_job(9)
        assert wait_for(lambda: agent._reap_stopped() or not agent._stopping, timeout=10)


def test_a_heartbeat_that_leaves_no_room_before_the_fence_is_refused(capsys, monkeypatch):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--url", "http://127.0.0.1:9", "--token", "t", "--heartbeat-interval", "55"])
    assert cli.run(args) == cli.EXIT_USAGE  # 55 s + the 10 s grace period >= the 60 s fence
    assert "less --grace-period (10 s)" in capsys.readouterr().err


@pytest.mark.parametrize("header, seconds", [("2", 2.0), ("0.5", 0.5), ("-3", 0.0), ("1e9", 300.0), ("soon", None),
                                             (None, None), ("nan", None)])
def test_retry_after_header(header, seconds):
    assert retry_after_s(header) == seconds


def test_busy_answers_are_retry_later_and_a_bare_503_is_unreachable(plane):
    client = ControlPlane(plane.url, "agent-token", timeout=2)
    plane.busy["/api/telemetry/samples/"] = (429, "")
    with pytest.raises(RetryLater) as busy:
        client.upload_samples([], 0)
    assert busy.value.after_s == 5.0
    plane.busy["/api/telemetry/samples/"] = (503, "7")
    with pytest.raises(RetryLater) as busy:
        client.upload_samples([], 0)
    assert busy.value.after_s == 7.0
    plane.busy["/api/telemetry/samples/"] = (503, "")
    with pytest.raises(Unreachable) as down:
        client.upload_samples([], 0)
    assert not isinstance(down.value, RetryLater)


def test_clients_of_two_threads_share_nothing(plane):
    client = ControlPlane(plane.url, "agent-token")
    twin = client.copy()
    assert twin is not client and twin._opener is not client._opener and twin.url == client.url
    assert twin.heartbeat(NODE_ID)["state"] == "ready" and math.isfinite(plane.heartbeat_times[-1])
