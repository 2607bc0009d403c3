"""--run-commands: simulated GPUs, real jobs. A node agent with --simulate runs every job as a
simulated job; with --run-commands a job that has a command runs that command (a training job
on the CPU, under the job contract) and only a job without one is simulated. The flag needs
--simulate, and --speedup 1 (the agent divides every job's measured rate by the speedup)."""
import pytest

from telemetry.agent import cli

from .test_agent_cli_intervals import _run
from .test_agent_loop import (  # fixtures: `as` marks them re-exported
    assignment,
    plane as plane,
    python,
    run_agent as run_agent,
)
from .test_agent_runner import wait_for


def test_with_run_commands_a_job_with_a_command_runs_it_and_one_without_is_simulated(plane, run_agent, tmp_path):
    plane.assignments = [
        assignment(3, python("print('the real job', flush=True)")),
        assignment(4, "", gpu_indexes=(1,), total_steps=50),
    ]
    run_agent(plane, simulate_seed=0, simulate_speedup=1, simulate_run_commands=True)
    real, simulated = tmp_path / "logs" / "job-3.out", tmp_path / "logs" / "job-4.out"
    assert wait_for(lambda: real.exists() and real.read_text() == "the real job\n")
    started = "simjob: ResNet-50 (batch size 64) on 1 x v100"
    assert wait_for(lambda: simulated.exists() and started in simulated.read_text())


def test_without_run_commands_a_simulated_node_simulates_every_job(plane, run_agent, tmp_path):
    plane.assignments = [assignment(5, python("print('the real job', flush=True)"), total_steps=50)]
    run_agent(plane, simulate_seed=0)
    log = tmp_path / "logs" / "job-5.out"
    assert wait_for(lambda: log.exists() and "simjob: " in log.read_text())
    assert "the real job" not in log.read_text()


@pytest.mark.parametrize("argv, problem", [
    (["--run-commands"], "--run-commands needs --simulate"),
    (["--simulate", "--run-commands", "--speedup", "10"], "--run-commands runs jobs at their own speed"),
])
def test_run_commands_is_refused_without_simulate_or_with_a_speedup(argv, problem, capsys):
    assert _run(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1
