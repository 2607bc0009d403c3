"""SlurmExecutor and its command runner, Slurm stood in for at the subprocess call: which
commands a snapshot, a submission and a signal run, with what arguments, environment and
input, and what Slurm's refusals become."""
import json
import os
import signal
import subprocess
import time

import pytest

from scheduler.executors.base import CANCELLED, FAILED, RUNNING, Executor, ExecutorError, Launch, Snapshot
from scheduler.executors.slurm import commands
from scheduler.executors.slurm.executor import SlurmExecutor, batch_script

from .conftest import FakeSlurm, recorded

SACCT_ARGV = ["sacct", "-c", "-P", "-n", "-o", "jobid,jobname,state,nodelist,start,end,exitcode"]


def launch(**fields) -> Launch:
    values = {"job_id": 42, "node": "n-v100", "gpu_type": "v100", "num_gpus": 2, "command": "python train.py --lr 0.1",
              "environment": {"GOGH_JOB_ID": "42", "WANDB_API_KEY": "s3cret-key"},
              "output_path": "/shared/out/42-1.log"}
    return Launch(**{**values, **fields})


def test_it_is_an_executor_that_pushes():
    executor = SlurmExecutor()
    assert isinstance(executor, Executor) and executor.pushes and executor.name == "slurm"


# the command runner


def test_a_command_runs_from_bin_dir_with_its_timeout_and_gives_its_stdout():
    slurm = FakeSlurm(squeue="out")
    assert commands.run(["squeue", "--json"], bin_dir="/opt/slurm/bin", timeout_s=7, runner=slurm) == "out"
    assert slurm.calls == [{"argv": ["/opt/slurm/bin/squeue", "--json"], "input": None, "env": None, "timeout": 7}]


def test_a_failing_command_is_an_error_with_its_command_line_and_slurms_message_on_one_line():
    slurm = FakeSlurm(sbatch=("", "sbatch: error: Batch job submission failed:\n  Invalid generic resource\n", 1))
    with pytest.raises(ExecutorError) as caught:
        commands.run(["sbatch", "-J", "gogh 1"], timeout_s=5, runner=slurm)
    assert caught.value.command == "sbatch -J 'gogh 1'"
    assert caught.value.message == "sbatch: error: Batch job submission failed: Invalid generic resource"


def test_a_long_message_is_trimmed_and_a_silent_failure_says_its_status():
    with pytest.raises(ExecutorError) as caught:
        commands.run(["sinfo"], timeout_s=5, runner=FakeSlurm(sinfo=("", "x" * 5000, 1)))
    assert len(caught.value.message) == commands.MESSAGE_LIMIT and caught.value.message.endswith("...")
    with pytest.raises(ExecutorError, match="exit status 2"):
        commands.run(["sinfo"], timeout_s=5, runner=FakeSlurm(sinfo=("", "", 2)))
    with pytest.raises(ExecutorError, match="from stdout"):
        commands.run(["sinfo"], timeout_s=5, runner=FakeSlurm(sinfo=("from stdout", "", 2)))


@pytest.mark.parametrize("raised, says", [
    (FileNotFoundError(2, "No such file"), "/opt/bin/sinfo not found"),
    (subprocess.TimeoutExpired(["sinfo"], 3), "no answer in 3 s"),
    (PermissionError(13, "Permission denied"), "cannot run it: .*Permission denied"),
    (ValueError("embedded null byte"), "cannot run it: embedded null byte"),
])
def test_a_missing_program_or_a_timeout_is_an_error_with_the_command(raised, says):
    with pytest.raises(ExecutorError, match=says) as caught:
        commands.run(["sinfo", "--json"], bin_dir="/opt/bin", timeout_s=3, runner=FakeSlurm(sinfo=raised))
    assert caught.value.command == "/opt/bin/sinfo --json"


def test_the_real_subprocess_call_a_missing_program_and_a_timeout():
    """The default runner (subprocess.run) at the same edge."""
    assert commands.run(["echo", "hi"], timeout_s=5) == "hi\n"
    assert commands.run(["cat"], timeout_s=5, stdin="script") == "script"
    assert commands.run(["sh", "-c", "echo $ONLY"], timeout_s=5, env={"ONLY": "this", "PATH": "/usr/bin:/bin"}) \
        == "this\n"
    with pytest.raises(ExecutorError, match="not found"):
        commands.run(["no-such-slurm-tool"], bin_dir="/nonexistent", timeout_s=5)
    with pytest.raises(ExecutorError, match="no answer in 0.2 s"):
        commands.run(["sleep", "5"], timeout_s=0.2)
    with pytest.raises(ExecutorError, match="nope"):
        commands.run(["sh", "-c", "echo nope >&2; exit 1"], timeout_s=5)


# snapshot


def test_a_snapshot_reads_sinfo_and_squeue_and_no_accounting_when_squeue_lists_every_run(slurm):
    executor = SlurmExecutor(runner=slurm, command_timeout_s=4)
    snapshot = executor.snapshot(waiting_on=["1", "6"])
    assert isinstance(snapshot, Snapshot)
    assert slurm.programs() == ["sinfo", "squeue"]
    assert [call["argv"] for call in slurm.calls] == [["sinfo", "--json"], ["squeue", "--json"]]
    assert all(call["timeout"] == 4 and call["env"] is None for call in slurm.calls)
    assert [node.name for node in snapshot.nodes] == ["n-k80", "n-p100", "n-v100"]
    assert [run.external_id for run in snapshot.runs] == ["1", "2", "3", "4", "5", "6"]
    assert snapshot.runs[0].job_id == 101 and snapshot.runs[0].state == RUNNING


def test_runs_waited_on_that_squeue_no_longer_lists_are_looked_up_in_accounting_only_those(slurm):
    sacct = "\n".join([
        "17|gogh-117|CANCELLED|n-v100|2026-12-02T11:07:43|2026-12-02T11:07:46|0:0",
        "17.batch|batch|CANCELLED|n-v100|2026-12-02T11:07:43|2026-12-02T11:07:46|0:15",
        "6|gogh-106|FAILED|n-p100|2026-12-02T11:07:43|2026-12-02T11:07:44|3:0",  # squeue lists it
        "9|gogh-109|FAILED|n-v100|2026-12-02T11:08:40|2026-12-02T11:08:42|75:0",
    ])
    slurm.answers["sacct"] = sacct
    snapshot = SlurmExecutor(runner=slurm).snapshot(waiting_on=["6", "17", "9", "404", "agent:3", "١٢"])
    assert slurm.calls[2]["argv"] == [*SACCT_ARGV, "-j", "9,17,404"]
    ended = {run.external_id: run for run in snapshot.runs[6:]}
    assert [run.external_id for run in snapshot.runs] == ["1", "2", "3", "4", "5", "6", "17", "9"]
    assert (ended["17"].job_id, ended["17"].state) == (117, CANCELLED)
    assert (ended["9"].job_id, ended["9"].state, ended["9"].exit_code) == (109, FAILED, 75)


def test_a_partition_keeps_the_snapshot_to_its_nodes(slurm):
    document = json.loads(recorded("sinfo.json"))
    document["nodes"][0]["partitions"] = ["debug"]
    slurm.answers["sinfo"] = json.dumps(document)
    assert [node.name for node in SlurmExecutor(runner=slurm, partition="gpu").snapshot().nodes] == [
        "n-p100", "n-v100"]


@pytest.mark.parametrize("program", ["sinfo", "squeue", "sacct"])
def test_any_command_of_a_snapshot_that_fails_fails_the_snapshot_with_its_command(slurm, program):
    slurm.answers[program] = ("", f"{program}: error: Unable to contact slurm controller (connect failure)", 1)
    with pytest.raises(ExecutorError, match="Unable to contact slurm controller") as caught:
        SlurmExecutor(runner=slurm, bin_dir="/opt/slurm/bin").snapshot(waiting_on=["77"])
    assert caught.value.command.startswith(f"/opt/slurm/bin/{program} ")


def test_output_a_parser_does_not_know_fails_the_snapshot(slurm):
    slurm.answers["squeue"] = recorded("squeue.json").replace('"PENDING"', '"LAUNCHED"')
    with pytest.raises(ExecutorError, match="job 5: unknown job_state 'LAUNCHED'"):
        SlurmExecutor(runner=slurm).snapshot()


# submit


def test_a_launch_is_an_sbatch_of_its_node_type_and_count_with_the_script_on_stdin():
    slurm = FakeSlurm(sbatch="12345\n")
    executor = SlurmExecutor(runner=slurm, job_prefix="h1t", command_timeout_s=9)
    assert executor.submit(launch()) == "12345"
    (call,) = slurm.calls
    assert call["argv"] == ["sbatch", "--parsable", "--no-requeue", "-J", "h1t-42", "-w", "n-v100",
                            "--gres=gpu:v100:2", "-o", "/shared/out/42-1.log", "-e", "/shared/out/42-1.log",
                            "--export=ALL"]
    assert call["input"] == "#!/bin/bash\nexec bash -c 'python train.py --lr 0.1'\n"
    assert call["timeout"] == 9


def test_the_environment_is_sbatchs_own_a_minimal_base_and_the_launchs_never_the_command_line(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("HOME", "/root")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "control-plane-secret")
    monkeypatch.setenv("SBATCH_QOS", "from-the-worker")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    slurm = FakeSlurm(sbatch="7")
    SlurmExecutor(runner=slurm).submit(launch())
    (call,) = slurm.calls
    assert call["env"] == {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
                           "GOGH_JOB_ID": "42", "WANDB_API_KEY": "s3cret-key"}
    assert not any("s3cret" in part for part in call["argv"]) and "s3cret" not in call["input"]


def test_the_launchs_environment_wins_over_the_base_and_a_missing_path_gets_a_default(monkeypatch):
    monkeypatch.delenv("PATH")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm-other/slurm.conf")
    slurm = FakeSlurm(sbatch="7")
    SlurmExecutor(runner=slurm).submit(launch(environment={"HOME": "/scratch/42"}))
    env = slurm.calls[0]["env"]
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["HOME"] == "/scratch/42"
    assert env["SLURM_CONF"] == "/etc/slurm-other/slurm.conf"  # sbatch must reach the cluster squeue reads


@pytest.mark.parametrize("key", ["SBATCH_ACCOUNT", "SBATCH_QOS", "SLURM_CONF"])
def test_a_launch_setting_slurms_own_variables_is_refused_and_nothing_is_submitted(key):
    slurm = FakeSlurm(sbatch="7")
    with pytest.raises(ExecutorError, match=f"the job's environment sets Slurm's own {key}") as caught:
        SlurmExecutor(runner=slurm).submit(launch(environment={key: "x", "GOGH_JOB_ID": "42"}))
    assert caught.value.command.startswith("sbatch --parsable")
    assert slurm.calls == []


def test_a_co_located_launch_asks_for_shards_with_partition_and_account():
    slurm = FakeSlurm(sbatch="12345;cluster-a\n")
    executor = SlurmExecutor(runner=slurm, partition="gpu")
    assert executor.submit(launch(shares=1, account="research", num_gpus=1)) == "12345"
    argv = slurm.calls[0]["argv"]
    assert argv[:8] == ["sbatch", "--parsable", "--no-requeue", "-J", "gogh-42", "-w", "n-v100", "--gres=shard:1"]
    assert argv[8:] == ["-p", "gpu", "--account=research", "-o", "/shared/out/42-1.log", "-e",
                        "/shared/out/42-1.log", "--export=ALL"]


def test_an_untyped_gpu_and_no_output_path():
    slurm = FakeSlurm(sbatch="8")
    SlurmExecutor(runner=slurm).submit(launch(gpu_type="", num_gpus=3, output_path=""))
    assert slurm.calls[0]["argv"][7:] == ["--gres=gpu:3", "--export=ALL"]


def test_sbatchs_refusal_is_an_error_with_its_message():
    refused = ("", "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification\n", 1)
    with pytest.raises(ExecutorError) as caught:
        SlurmExecutor(runner=FakeSlurm(sbatch=refused)).submit(launch(gpu_type="h100"))
    assert "--gres=gpu:h100:2" in caught.value.command
    assert caught.value.message == "sbatch: error: Batch job submission failed: Invalid generic resource (gres) " \
                                   "specification"


@pytest.mark.parametrize("stdout", ["", "Submitted batch job 12", "12 13", "-1"])
def test_sbatch_output_that_is_not_a_job_id_is_an_error(stdout):
    with pytest.raises(ExecutorError, match="not a job id"):
        SlurmExecutor(runner=FakeSlurm(sbatch=stdout)).submit(launch())


@pytest.mark.parametrize("command, status", [("exit 3", 3), ("true", 0), ("cd / && exit 75", 75)])
def test_the_batch_scripts_exit_status_is_the_commands(tmp_path, command, status):
    script = tmp_path / "batch.sh"
    script.write_text(batch_script(command))
    assert subprocess.run(["bash", str(script)], timeout=10).returncode == status


def test_sigterm_to_the_batch_script_reaches_the_command_itself(tmp_path):
    """The notice signals the batch script's process: after exec it is the command, which
    traps it and exits with the contract's 75."""
    job = tmp_path / "job.sh"
    job.write_text("trap 'echo got TERM; exit 75' TERM\necho started\nwhile true; do sleep 0.1; done\n")
    script = tmp_path / "batch.sh"
    script.write_text(batch_script(f"bash {job}"))
    process = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "started\n"
        time.sleep(0.2)
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=10) == 75
        assert process.stdout.read() == "got TERM\n"
    finally:
        process.kill()
        process.wait()


def test_a_command_with_quotes_reaches_bash_as_it_is(tmp_path):
    script = tmp_path / "batch.sh"
    script.write_text(batch_script("""echo "it's $((1+2))" '$HOME'"""))
    assert subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=10).stdout == \
        "it's 3 $HOME\n"


# signal

STATE_ARGV = ["squeue", "-h", "-t", "all", "-j", "12", "-o", "%T"]


def test_the_notice_is_sigterm_to_all_the_processes_of_a_started_run_and_the_kill_a_cancel():
    slurm = FakeSlurm(scancel="", squeue="RUNNING\n")
    executor = SlurmExecutor(runner=slurm)
    executor.signal("12", kill=False)
    executor.signal("12", kill=True)
    assert [call["argv"] for call in slurm.calls] == [
        STATE_ARGV, ["scancel", "--signal=TERM", "--full", "12"], ["scancel", "12"]]


@pytest.mark.parametrize("state", ["PENDING", "CONFIGURING", "REQUEUE_HOLD"])
def test_the_notice_to_a_run_whose_script_has_not_started_cancels_it(state):
    slurm = FakeSlurm(scancel="", squeue=f"{state}\n")
    SlurmExecutor(runner=slurm).signal("12", kill=False)
    assert [call["argv"] for call in slurm.calls] == [STATE_ARGV, ["scancel", "12"]]


@pytest.mark.parametrize("kill", [False, True])
@pytest.mark.parametrize("said", [
    "scancel: error: Kill job error on job id 12: Invalid job id specified",
    "scancel: error: Kill job error on job id 12: Job/step already completing or completed",
])
def test_signalling_a_run_that_has_ended_is_not_an_error(kill, said):
    slurm = FakeSlurm(scancel=("", said, 1), squeue="COMPLETED\n")
    SlurmExecutor(runner=slurm).signal("12", kill=kill)
    assert slurm.programs()[-1] == "scancel"


def test_the_notice_to_a_run_slurm_has_forgotten_is_not_an_error():
    slurm = FakeSlurm(squeue=("", "slurm_load_jobs error: Invalid job id specified", 1), scancel="")
    SlurmExecutor(runner=slurm).signal("12", kill=False)
    assert slurm.programs() == ["squeue"]


@pytest.mark.parametrize("program", ["squeue", "scancel"])
def test_any_other_refusal_is_an_error(program):
    slurm = FakeSlurm(scancel="", squeue="RUNNING")
    slurm.answers[program] = ("", f"{program}: error: Unable to contact slurm controller", 1)
    with pytest.raises(ExecutorError, match="Unable to contact") as caught:
        SlurmExecutor(runner=slurm).signal("12", kill=False)
    assert caught.value.command.startswith(program)
