"""The agent's observer mode (--observe), for nodes whose jobs Slurm runs: simulated GPUs
against the stand-in control plane; it registers, heartbeats and uploads samples, never asks
for assignments (so never runs one, even one listed), and stopping it does not take the node
down. The command line passes the flag and refuses it with --run-commands."""
import argparse
import os
import threading

import pytest

from telemetry.agent import cli
from telemetry.agent.agent import Agent
from telemetry.agent.client import ControlPlane
from telemetry.agent.config import AgentConfig
from telemetry.agent.simulated import SimulatedBackend, SimulatedType

from .fake_control_plane import FakeControlPlane
from .test_agent_loop import assignment, python
from .test_agent_runner import wait_for

V100 = SimulatedType(name="v100", memory_gb=16, power_curve=((0.0, 35.0), (1.0, 300.0)))


@pytest.fixture
def plane():
    plane = FakeControlPlane().start()
    yield plane
    plane.stop()


def start(plane, tmp_path, **overrides):
    config = AgentConfig(**{
        "hostname": "n-v100", "log_dir": tmp_path / "logs", "sample_interval_s": 0.2, "upload_interval_s": 0.2,
        "heartbeat_interval_s": 0.2, "poll_interval_s": 0.1, "progress_interval_s": 0.2, "grace_s": 0.5,
        "retry_s": 0.2, "simulate_seed": 0, **overrides,
    })
    backend = SimulatedBackend(hostname="n-v100", layout=[("v100", 2)], types={"v100": V100}, seed=0)
    agent = Agent(backend=backend, client=ControlPlane(plane.url, "agent-token", timeout=2), config=config)
    agent.thread = threading.Thread(target=agent.run, daemon=True)
    agent.thread.start()
    return agent


def test_an_observer_samples_and_heartbeats_but_never_polls_or_runs_a_job(plane, tmp_path):
    marker = tmp_path / "ran"
    plane.assignments = [assignment(1, python(f"open({str(marker)!r}, 'w').close()"))]
    agent = start(plane, tmp_path, observe=True, simulate_run_commands=True)
    try:
        assert wait_for(lambda: plane.heartbeats >= 3 and len(plane.samples) >= 4)
        assert [gpu["uuid"] for gpu in plane.registrations[0]["gpus"]] == [d.uuid for d in agent.backend.devices()]
        assert {sample["gpu"] for sample in plane.samples} == {d.uuid for d in agent.backend.devices()}
    finally:
        agent.stop()
        agent.thread.join(timeout=15)
    assert plane.assignment_polls == 0
    assert not marker.exists() and not os.path.exists(tmp_path / "logs" / "job-1.out")
    assert plane.progress == [] and plane.progress_batches == []
    assert not plane.left and not plane.leaving  # Slurm says whether the node is up, not its observer


def test_without_observe_the_same_agent_polls_runs_the_job_and_leaves(plane, tmp_path):
    marker = tmp_path / "ran"
    plane.assignments = [assignment(1, python(f"open({str(marker)!r}, 'w').close()"))]
    agent = start(plane, tmp_path, simulate_run_commands=True)
    try:
        assert wait_for(marker.exists)
    finally:
        agent.stop()
        agent.thread.join(timeout=15)
    assert plane.assignment_polls > 0 and plane.left


def test_the_command_line_passes_observe_and_refuses_it_with_run_commands(monkeypatch):
    configs = []

    class Recorded:
        def __init__(self, *, backend, client, config):
            configs.append(config)

        def run(self):
            pass

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    monkeypatch.setattr(cli, "_nvml_backend", lambda: None)
    monkeypatch.setattr(cli, "Agent", Recorded)
    assert cli.run(parser.parse_args(["--url", "http://cp", "--token", "t", "--observe"])) == 0
    assert cli.run(parser.parse_args(["--url", "http://cp", "--token", "t"])) == 0
    assert [config.observe for config in configs] == [True, False]
    args = parser.parse_args(["--url", "http://cp", "--token", "t", "--observe", "--simulate", "--run-commands"])
    assert cli.run(args) == cli.EXIT_USAGE
    assert len(configs) == 2
