"""Power limits on the node: the agent applies what each assignment asks for through NVML (the
fake), refuses whole groups with a reason, puts the default back on idle GPUs and on stop, and
reports what is in force in its heartbeats."""
import argparse
import threading

import pynvml
import pytest

from telemetry.agent import cli
from telemetry.agent.agent import Agent
from telemetry.agent.client import ControlPlane
from telemetry.agent.config import AgentConfig
from telemetry.agent.gpus import PowerLimitRefused
from telemetry.agent.jobs import Assignment
from telemetry.agent.nvml import NvmlBackend
from telemetry.agent.power import PowerLimiter
from telemetry.agent.simjob import read_pace
from telemetry.agent.simulated import NO_PERMISSION, SimulatedBackend, SimulatedType

from .fake_control_plane import FakeControlPlane
from .fake_nvml import fake_nvml
from .test_agent_loop import assignment, plane as plane, python, run_agent as run_agent
from .test_agent_runner import wait_for

DEFAULT_MW = 300_000


def job(job_id, gpus, limit, partners=()):
    limits = (limit,) * len(gpus)
    return Assignment(job_id=job_id, allocation_ids=(job_id,), gpu_indexes=tuple(gpus), gpu_type="v100",
                      workload="w", partners=tuple(partners), command="true", environment={}, total_steps=None,
                      power_limits_w=limits)


@pytest.fixture
def node():
    """(fake NVML with 4 GPUs, a limiter over it)."""
    nvml = fake_nvml(count=4)
    backend = NvmlBackend(nvml=nvml)
    backend.open()
    limiter = PowerLimiter(backend)
    limiter.open(backend.devices())
    return nvml, limiter


def errors(limiter):
    return [gpu["power_limit_error"] for gpu in limiter.report()]


def test_the_registration_carries_each_gpus_range_default_and_limit_in_force():
    backend = NvmlBackend(nvml=fake_nvml(count=1))
    backend.open()
    [gpu] = [device.report() for device in backend.devices()]
    assert (gpu["power_limit_min_w"], gpu["power_limit_max_w"]) == (100, 300)
    assert gpu["power_limit_default_w"] == 300 and gpu["power_limit_w"] == 300


def test_a_gpu_that_cannot_say_its_range_reports_none_of_it():
    backend = NvmlBackend(nvml=fake_nvml(count=1, unsupported=("nvmlDeviceGetPowerManagementLimitConstraints",)))
    backend.open()
    [gpu] = backend.devices()
    assert gpu.power_limit_min_w is None and gpu.power_limit_range is None
    assert "power_limit_min_w" not in gpu.report()


def test_applies_the_assigned_limit_and_reports_it(node):
    nvml, limiter = node
    limiter.follow([job(1, [0], 200.0), job(2, [1], None)])
    assert nvml.limits_mw == {0: 200_000, 1: DEFAULT_MW, 2: DEFAULT_MW, 3: DEFAULT_MW}
    assert [gpu["power_limit_w"] for gpu in limiter.report()] == [200, 300, 300, 300]
    assert errors(limiter) == ["", "", "", ""]
    assert "nvmlDeviceSetPowerManagementLimit" in nvml.calls
    nvml.calls.clear()
    limiter.follow([job(1, [0], 200.0), job(2, [1], None)])  # the next poll: nothing to do
    assert "nvmlDeviceSetPowerManagementLimit" not in nvml.calls


def test_a_limit_outside_the_range_is_refused_before_nvml_with_a_reason(node):
    nvml, limiter = node
    limiter.follow([job(1, [0], 50.0)])
    assert nvml.limits_mw[0] == DEFAULT_MW and "nvmlDeviceSetPowerManagementLimit" not in nvml.calls
    assert errors(limiter)[0] == "50 W is outside GPU 0's range (100-300 W)"


def test_no_permission_is_reported_and_changes_nothing_else(node):
    nvml, limiter = node
    nvml.refuse[1] = pynvml.NVML_ERROR_NO_PERMISSION
    limiter.follow([job(1, [0], 200.0), job(2, [1], 150.0)])
    assert nvml.limits_mw == {0: 200_000, 1: DEFAULT_MW, 2: DEFAULT_MW, 3: DEFAULT_MW}
    assert errors(limiter)[0] == ""
    assert "no permission (setting a power limit needs root)" in errors(limiter)[1]
    sets = nvml.calls.count("nvmlDeviceSetPowerManagementLimit")
    limiter.follow([job(1, [0], 200.0), job(2, [1], 150.0)])
    assert nvml.calls.count("nvmlDeviceSetPowerManagementLimit") == sets  # refused once is not asked again
    del nvml.refuse[1]
    limiter.follow([job(1, [0], 200.0), job(2, [1], 140.0)])  # a new limit is tried, and clears the error
    assert nvml.limits_mw[1] == 140_000 and errors(limiter)[1] == ""


def test_a_multi_gpu_job_whose_gpu_refuses_gets_its_other_gpus_put_back(node):
    nvml, limiter = node
    limiter.follow([job(1, [0, 1, 2], 250.0)])
    nvml.refuse[2] = pynvml.NVML_ERROR_NOT_SUPPORTED
    limiter.follow([job(1, [0, 1, 2], 180.0)])
    assert nvml.limits_mw == {0: 250_000, 1: 250_000, 2: 250_000, 3: DEFAULT_MW}  # what they had
    refused = errors(limiter)[:3]
    assert len(set(refused)) == 1 and refused[0].startswith("GPU 2: NVML refused 180 W: this GPU does not support")


def test_co_located_jobs_assigned_different_limits_are_refused_as_a_control_plane_bug(node):
    nvml, limiter = node
    limiter.follow([job(1, [0, 1], 200.0), job(2, [1], 250.0), job(3, [3], 150.0)])
    assert nvml.limits_mw == {0: DEFAULT_MW, 1: DEFAULT_MW, 2: DEFAULT_MW, 3: 150_000}
    assert errors(limiter)[0] == errors(limiter)[1] == (
        "jobs 1, 2 share GPU 1 but were assigned different power limits (200 W, 250 W): one GPU has one limit"
    )
    limiter.follow([job(1, [0, 1], 200.0), job(2, [1], 200.0), job(3, [3], 150.0)])  # one limit: applied
    assert nvml.limits_mw[0] == nvml.limits_mw[1] == 200_000 and errors(limiter)[:2] == ["", ""]


def test_an_idle_gpu_gets_its_default_back_only_where_the_agent_changed_it(node):
    nvml, limiter = node
    nvml.limits_mw[3] = 120_000  # an operator's own limit on a GPU GOGH never touched
    limiter.follow([job(1, [0], 200.0)])
    limiter.follow([])
    assert nvml.limits_mw == {0: DEFAULT_MW, 1: DEFAULT_MW, 2: DEFAULT_MW, 3: 120_000}


def test_a_failed_gpu_is_left_alone(node):
    nvml, limiter = node
    limiter.follow([job(1, [0, 1], 200.0)], failed={1})
    assert nvml.limits_mw[0] == DEFAULT_MW


def test_the_simulated_backend_caps_its_power_at_the_limit_and_refuses_out_of_range():
    types = {"v100": SimulatedType("v100", 16, ((0.0, 50.0), (1.0, 300.0)))}
    backend = SimulatedBackend(hostname="n", layout=[("v100", 1)], types=types, noise=0.0)
    backend.open()
    [gpu] = backend.devices()
    assert (gpu.power_limit_min_w, gpu.power_limit_max_w, gpu.power_limit_default_w) == (120, 300, 300)
    backend.note_busy({0})
    busy = backend.sample(0)[0].power_w
    limiter = PowerLimiter(backend)
    limiter.open([gpu])
    limiter.follow([job(1, [0], 150.0)])
    assert busy > 150 and backend.sample(1)[0].power_w == 150 and backend.power_limit(0) == 150
    limiter.follow([job(1, [0], 100.0)])
    assert backend.power_limit(0) == 150 and "outside GPU 0's range (120-300 W)" in errors(limiter)[0]


def test_the_assignment_carries_the_limit_of_each_gpu_sorted_by_index():
    item = assignment(1, "true", gpu_indexes=(3, 1), power_limits_w=[250.0, None])
    assert Assignment.from_api(item).limits_by_gpu == {1: None, 3: 250.0}
    assert Assignment.from_api(assignment(1, "true", gpu_indexes=(3, 1))).limits_by_gpu == {1: None, 3: None}


# --- the whole agent against the stand-in control plane


def test_the_agent_applies_limits_reports_them_and_a_change_does_not_restart_the_job(plane, run_agent, tmp_path):
    nvml = fake_nvml(count=2)
    plane.knows_power_limits = True
    command = python("import os, time; print('pid', os.getpid(), flush=True); time.sleep(60)")
    plane.assignments = [assignment(5, command, gpu_indexes=(0,), power_limits_w=[200.0])]
    run_agent(plane, nvml=nvml)
    assert wait_for(lambda: nvml.limits_mw[0] == 200_000)
    log = tmp_path / "logs" / "job-5.out"
    assert wait_for(lambda: log.exists() and "pid" in log.read_text())
    assert wait_for(lambda: any(body and body["gpus"][0]["power_limit_w"] == 200 for body in plane.heartbeat_bodies))
    plane.assignments = [assignment(5, command, gpu_indexes=(0,), power_limits_w=[180.0])]
    assert wait_for(lambda: nvml.limits_mw[0] == 180_000)
    assert log.read_text().count("pid") == 1  # the same process: a limit change restarts nothing
    assert not any(p["status"] != "running" for p in plane.progress)
    plane.assignments = []
    assert wait_for(lambda: nvml.limits_mw[0] == DEFAULT_MW)  # idle: the default is back


def test_the_agent_reports_a_refusal_in_its_heartbeats(plane, run_agent):
    nvml = fake_nvml(count=2)
    nvml.refuse[0] = pynvml.NVML_ERROR_NO_PERMISSION
    plane.knows_power_limits = True
    plane.assignments = [assignment(5, python("import time; time.sleep(60)"), power_limits_w=[200.0])]
    run_agent(plane, nvml=nvml)
    assert wait_for(lambda: any(body and "no permission" in body["gpus"][0]["power_limit_error"]
                                for body in plane.heartbeat_bodies))
    assert nvml.limits_mw[0] == DEFAULT_MW


def test_stopping_the_agent_puts_the_default_back(plane, run_agent):
    nvml = fake_nvml(count=2)
    plane.assignments = [assignment(5, python("import time; time.sleep(60)"), gpu_indexes=(0, 1),
                                    power_limits_w=[150.0, 150.0])]
    agent = run_agent(plane, nvml=nvml)
    assert wait_for(lambda: nvml.limits_mw == {0: 150_000, 1: 150_000})
    agent.stop()
    agent.thread.join(timeout=15)
    assert nvml.limits_mw == {0: DEFAULT_MW, 1: DEFAULT_MW} and plane.left


def test_an_agent_without_a_control_plane_that_knows_limits_sends_bare_heartbeats(plane, run_agent):
    run_agent(plane)
    assert wait_for(lambda: plane.heartbeats >= 2)
    assert all("gpus" not in (body or {}) for body in plane.heartbeat_bodies)


def test_a_control_plane_from_before_power_limits_gets_a_registration_without_them(plane, run_agent):
    plane.before_power_limits = True
    agent = run_agent(plane)
    assert wait_for(lambda: plane.heartbeats >= 1)
    first, second = plane.registrations
    assert first["gpus"][0]["power_limit_w"] == 300
    assert not any(key.startswith("power_limit") for gpu in second["gpus"] for key in gpu)
    assert second["gpus"][0]["uuid"] == "GPU-fake-0" and not agent.errors


def test_an_observer_never_sets_a_limit(tmp_path):
    observed = FakeControlPlane().start()
    nvml = fake_nvml(count=1)
    observed.assignments = [assignment(5, "true", power_limits_w=[150.0])]
    config = AgentConfig(hostname="n", log_dir=tmp_path, observe=True, sample_interval_s=0.5,
                         heartbeat_interval_s=0.5, poll_interval_s=0.1)
    agent = Agent(backend=NvmlBackend(nvml=nvml), client=ControlPlane(observed.url, "agent-token"), config=config)
    agent.backend.open()
    agent._register()
    for _ in range(3):
        agent.step(1e9)
    assert "nvmlDeviceSetPowerManagementLimit" not in nvml.calls and observed.assignment_polls == 0
    observed.stop()


# --- the simulated node: a limit caps power and slows its simulated job as its round planned


def test_a_simulated_job_slows_under_a_limit_without_a_restart(plane, tmp_path):
    types = {"v100": SimulatedType("v100", 16, ((0.0, 50.0), (1.0, 300.0)))}
    backend = SimulatedBackend(hostname="n", layout=[("v100", 1)], types=types)
    config = AgentConfig(hostname="n", log_dir=tmp_path, simulate_seed=0, sample_interval_s=0.5,
                         heartbeat_interval_s=0.5, poll_interval_s=0.1, grace_s=0.5)
    agent = Agent(backend=backend, client=ControlPlane(plane.url, "agent-token"), config=config)
    plane.assignments = [assignment(6, "", total_steps=100_000, power_limits_w=[None])]
    thread = threading.Thread(target=agent.run, daemon=True)
    thread.start()
    pace = tmp_path / "job-6.pace"
    try:
        assert wait_for(lambda: 6 in agent._running and pace.exists() and float(pace.read_text()) == 1.0)
        pid = agent._running[6][1].pid
        plane.assignments = [assignment(6, "", total_steps=100_000, power_limits_w=[150.0], power_limit_speed=0.83)]
        assert wait_for(lambda: float(pace.read_text()) < 1)
        assert float(pace.read_text()) == pytest.approx(0.83, abs=1e-6)  # the speed its round planned at 150 W
        assert agent._running[6][1].pid == pid and backend.power_limit(0) == 150
    finally:
        agent.stop()
        thread.join(timeout=15)
    assert backend.power_limit(0) == 300  # the default is back


def test_a_simulated_board_slows_only_while_it_holds_a_limit_below_its_default():
    types = {"v100": SimulatedType("v100", 16, ((0.0, 50.0), (1.0, 300.0)))}
    backend = SimulatedBackend(hostname="n", layout=[("v100", 2)], types=types)
    backend.open()
    assert backend.pace([0, 1], 0.8) == 1.0  # both at their default: full speed whatever was planned
    backend.set_power_limit(1, 180.0)
    assert backend.pace([0, 1], 0.8) == 0.8 and backend.pace([0], 0.8) == 1.0
    assert backend.pace([1], None) == 1.0  # nothing planned (a control plane before the field)
    refusing = SimulatedBackend(hostname="n", layout=[("v100", 1)], types=types, refuse_limits=NO_PERMISSION)
    refusing.open()
    with pytest.raises(PowerLimitRefused):
        refusing.set_power_limit(0, 180.0)
    assert refusing.pace([0], 0.8) == 1.0  # the refused limit left it at its default


@pytest.mark.parametrize("value,read", [(0.8, 0.8), (1, 1.0), (None, None), (0, None), (1.2, None), (-0.5, None),
                                        ("0.8", None), (True, None)])
def test_an_assignment_takes_a_planned_speed_in_0_1_or_none(value, read):
    item = assignment(6, "", power_limits_w=[150.0], power_limit_speed=value)
    assert Assignment.from_api(item).power_limit_speed == read


@pytest.mark.parametrize("text,pace", [("0.5\n", 0.5), ("1", 1.0), ("0", 1.0), ("1.5", 1.0), ("fast", 1.0)])
def test_a_simulated_job_reads_its_pace_or_runs_at_full_speed(tmp_path, text, pace):
    path = tmp_path / "job.pace"
    path.write_text(text)
    assert read_pace(path) == pace
    assert read_pace(tmp_path / "none") == 1.0 and read_pace(None) == 1.0


def test_refusing_limits_is_a_simulated_nodes_flag(capsys, monkeypatch):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(["--url", "http://x", "--token", "t", "--refuse-power-limits"])) == cli.EXIT_USAGE
    assert "--refuse-power-limits needs --simulate" in capsys.readouterr().err
    types = {"v100": SimulatedType("v100", 16, ((0.0, 50.0), (1.0, 300.0)))}
    backend = SimulatedBackend(hostname="n", layout=[("v100", 1)], types=types, refuse_limits=NO_PERMISSION)
    backend.open()
    with pytest.raises(PowerLimitRefused, match="Insufficient Permissions"):
        backend.set_power_limit(0, 200)
    assert backend.power_limit(0) == 300
