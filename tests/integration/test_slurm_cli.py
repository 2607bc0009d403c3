"""The Slurm executor against the real local Slurm (`.ci/slurm`: slurmctld and three slurmds
with emulated GPUs), no Django stack: real sbatch, squeue, sinfo, sacct and scancel, real jobs
that are small bash scripts. The runs are named h1t-<n> (job_prefix "h1t"); every job a test
submits is cancelled when it ends, passed or not. Other sessions may use the cluster at the
same time: the waits are generous and nothing here assumes the cluster is idle."""
import json
import subprocess
import time
from pathlib import Path

import pytest

from scheduler.executors.base import CANCELLED, FAILED, PENDING, RUNNING, ExecutorError, Launch, RunStatus
from scheduler.executors.slurm.executor import SlurmExecutor

PREFIX = "h1t"
WAIT_S = 90  # sched_interval is 2 s; the cluster may be busy with other sessions' jobs


@pytest.fixture(scope="module", autouse=True)
def slurm_is_up():
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%N %T"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"Slurm is not running here ({exc}): run `.ci/slurm start` (as root)")
    if done.returncode != 0 or "n-v100" not in done.stdout:
        pytest.fail(f"Slurm is not running here ({(done.stderr or done.stdout).strip()}): run `.ci/slurm start` "
                    "(as root)")


@pytest.fixture
def submitted():
    """Every Slurm job id a test submitted; all cancelled when the test ends."""
    ids: list[str] = []
    yield ids
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=30)


@pytest.fixture
def slurm(submitted):
    return Slurm(SlurmExecutor(job_prefix=PREFIX, command_timeout_s=30), submitted)


class Slurm:
    """The executor, with what the tests need around it: submissions recorded for the
    finalizer, and waits on the snapshot."""

    def __init__(self, executor: SlurmExecutor, submitted: list[str]):
        self.executor = executor
        self.submitted = submitted

    def submit(self, tmp_path: Path, job_id: int, script: str, **fields) -> tuple[str, Path]:
        """A launch of `script` (a bash script written in tmp_path); (its Slurm id, its output file)."""
        path = tmp_path / f"job-{job_id}.sh"
        path.write_text(script)
        output = tmp_path / f"job-{job_id}.out"
        values = {"node": "n-v100", "gpu_type": "v100", "num_gpus": 1, "output_path": str(output),
                  "environment": {"GOGH_JOB_ID": str(job_id)}}
        external_id = self.executor.submit(Launch(job_id=job_id, command=f"bash {path}", **{**values, **fields}))
        self.submitted.append(external_id)
        return external_id, output

    def sbatch(self, *args: str) -> str:
        """A job submitted straight to Slurm, not through GOGH (its output thrown away, not left
        as slurm-<id>.out in the working directory)."""
        done = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", *args], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        self.submitted.append(done.stdout.strip().split(";")[0])
        return self.submitted[-1]

    def run(self, external_id: str, waiting_on=()) -> RunStatus | None:
        snapshot = self.executor.snapshot(waiting_on=waiting_on)
        return next((run for run in snapshot.runs if run.external_id == external_id), None)

    def wait(self, external_id: str, until, what: str) -> RunStatus:
        deadline = time.monotonic() + WAIT_S
        while True:
            run = self.run(external_id)
            if run is not None and until(run):
                return run
            if time.monotonic() > deadline:
                pytest.fail(f"Slurm job {external_id} not {what} in {WAIT_S} s: {run}")
            time.sleep(0.5)


def wait_for_text(path: Path, text: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while not (path.exists() and text in path.read_text()):
        if time.monotonic() > deadline:
            pytest.fail(f"{text!r} not in {path} in {WAIT_S} s: {path.read_text() if path.exists() else 'no file'}")
        time.sleep(0.2)
    return path.read_text()


def running(run: RunStatus) -> bool:
    return run.state == RUNNING


def ended(run: RunStatus) -> bool:
    return run.state not in (PENDING, RUNNING)


REPORT = """echo "GOGH_JOB_ID=$GOGH_JOB_ID"
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "SECRET=$H1T_SECRET"
echo reported
sleep 120
"""


def test_a_run_of_two_v100s_runs_on_its_node_with_the_gpus_slurm_chose_and_the_contracts_environment(
        slurm, tmp_path):
    external_id, output = slurm.submit(tmp_path, 1, REPORT, num_gpus=2,
                                       environment={"GOGH_JOB_ID": "1", "H1T_SECRET": "s3cret-value"})
    run = slurm.wait(external_id, running, "running")
    assert (run.job_id, run.node, run.shared, run.native_state) == (1, "n-v100", False, "RUNNING")
    assert len(run.gpu_indexes) == 2 and run.started_at is not None and run.exit_code is None
    said = wait_for_text(output, "reported")
    assert "GOGH_JOB_ID=1\n" in said and "SECRET=s3cret-value\n" in said
    assert f"CUDA_VISIBLE_DEVICES={','.join(map(str, run.gpu_indexes))}\n" in said  # what the job saw = read back
    script = subprocess.run(["scontrol", "write", "batch_script", external_id, "-"], capture_output=True,
                            text=True, timeout=30)
    assert script.returncode == 0 and "bash " in script.stdout
    assert "s3cret" not in script.stdout  # the environment is never in the script
    shown = subprocess.run(["scontrol", "show", "job", external_id], capture_output=True, text=True, timeout=30)
    assert "s3cret" not in shown.stdout and "JobName=h1t-1" in shown.stdout


def test_two_co_located_runs_share_one_gpu_of_one_node_under_the_tenants_account(slurm, tmp_path):
    slurm.executor.partition = "gpu"
    first, _ = slurm.submit(tmp_path, 2, "sleep 120\n", node="n-p100", gpu_type="p100", shares=1)
    second, _ = slurm.submit(tmp_path, 3, "sleep 120\n", node="n-p100", gpu_type="p100", shares=1,
                             account="research")
    one = slurm.wait(first, running, "running")
    other = slurm.wait(second, running, "running")
    for run, job_id in ((one, 2), (other, 3)):
        assert (run.job_id, run.node, run.shared) == (job_id, "n-p100", True)
        assert len(run.gpu_indexes) == 1
    shown = subprocess.run(["squeue", "-h", "-j", f"{first},{second}", "-o", "%i %a %P"], capture_output=True,
                           text=True, timeout=30)
    assert sorted(shown.stdout.split("\n")[:2]) == sorted([f"{first} (null) gpu", f"{second} research gpu"])


def test_the_notice_reaches_a_script_that_traps_it_and_its_75_is_the_runs_exit_status(slurm, tmp_path):
    trap = "trap 'echo got TERM; exit 75' TERM\necho started\nwhile true; do sleep 0.2; done\n"
    external_id, output = slurm.submit(tmp_path, 4, trap)
    slurm.wait(external_id, running, "running")
    wait_for_text(output, "started")
    slurm.executor.signal(external_id, kill=False)
    run = slurm.wait(external_id, ended, "ended")
    assert (run.state, run.exit_code, run.native_state) == (FAILED, 75, "FAILED")
    assert "got TERM" in output.read_text()
    slurm.executor.signal(external_id, kill=False)  # already ended: not an error
    slurm.executor.signal(external_id, kill=True)


def test_the_kill_cancels_a_run(slurm, tmp_path):
    external_id, _ = slurm.submit(tmp_path, 5, "sleep 120\n")
    slurm.wait(external_id, running, "running")
    slurm.executor.signal(external_id, kill=True)
    run = slurm.wait(external_id, ended, "ended")
    assert (run.state, run.native_state, run.job_id) == (CANCELLED, "CANCELLED", 5)


def test_the_notice_to_a_run_still_waiting_for_its_gpus_cancels_it(slurm, tmp_path):
    slurm.sbatch("-J", "h1t-blocker", "-w", "n-k80", "--gres=gpu:k80:4", "--wrap", "sleep 120")
    external_id, _ = slurm.submit(tmp_path, 6, "sleep 120\n", node="n-k80", gpu_type="k80")
    run = slurm.wait(external_id, lambda run: run.state == PENDING and run.reason, "pending with a reason")
    assert run.native_state == "PENDING" and run.started_at is None
    slurm.executor.signal(external_id, kill=False)
    assert slurm.wait(external_id, ended, "ended").state == CANCELLED


def test_a_failing_run_ends_failed_with_its_exit_status(slurm, tmp_path):
    external_id, _ = slurm.submit(tmp_path, 7, "echo failing\nexit 3\n")
    run = slurm.wait(external_id, ended, "ended")
    assert (run.state, run.exit_code, run.reason, run.job_id) == (FAILED, 3, "NonZeroExitCode", 7)
    assert run.ended_at >= run.started_at


def test_a_job_submitted_straight_to_slurm_is_a_run_of_no_gogh_job_with_its_gpus(slurm):
    foreign = slurm.sbatch("-J", "h1t-foreign", "-w", "n-k80", "--gres=gpu:k80:1", "--wrap", "sleep 120")
    run = slurm.wait(foreign, running, "running")
    assert (run.job_id, run.node, run.shared, run.user) == (None, "n-k80", False, "root")
    assert len(run.gpu_indexes) == 1


def test_a_gres_type_the_node_lacks_is_sbatchs_refusal_and_nothing_runs(slurm, tmp_path):
    """sbatch refuses, yet slurmctld keeps a record of the job it refused: FAILED
    (BadConstraints) at once, never started, holding nothing."""
    before = {run.external_id for run in slurm.executor.snapshot().runs}
    with pytest.raises(ExecutorError) as caught:
        slurm.submit(tmp_path, 8, "true\n", gpu_type="h100")
    assert caught.value.command.startswith("sbatch --parsable") and "--gres=gpu:h100:1" in caught.value.command
    assert "Requested node configuration is not available" in caught.value.message
    refused = [run for run in slurm.executor.snapshot().runs if run.job_id == 8 and run.external_id not in before]
    slurm.submitted.extend(run.external_id for run in refused)
    assert len(refused) <= 1
    assert all(run.state == FAILED and run.reason.startswith("BadConstraints") and not run.gpu_indexes
               for run in refused)


def test_a_run_squeue_no_longer_lists_is_read_from_accounting(slurm, tmp_path):
    """squeue lists an ended job for MinJobAge (5 min here); after that only accounting (the
    jobcomp file, `sacct -c`) has it. The five minutes are cut short: squeue's real answer with
    that one job taken out; sinfo, sbatch and sacct are Slurm's own."""
    external_id, _ = slurm.submit(tmp_path, 9, "exit 3\n")
    slurm.wait(external_id, ended, "ended")
    commands = []

    def squeue_forgets_it(argv, **kwargs):
        commands.append(argv)
        done = subprocess.run(argv, **kwargs)
        if argv[0] == "squeue":
            document = json.loads(done.stdout)
            document["jobs"] = [job for job in document["jobs"] if str(job["job_id"]) != external_id]
            done.stdout = json.dumps(document)
        return done

    never_known = "999999999"
    executor = SlurmExecutor(job_prefix=PREFIX, runner=squeue_forgets_it)
    snapshot = executor.snapshot(waiting_on=[external_id, never_known])
    assert commands[-1][:3] == ["sacct", "-c", "-P"]
    assert commands[-1][-2:] == ["-j", ",".join(sorted([external_id, never_known], key=int))]
    found = {run.external_id: run for run in snapshot.runs}
    assert never_known not in found  # a run Slurm knows nothing of is left out
    run = found[external_id]
    assert (run.job_id, run.state, run.exit_code, run.node, run.native_state) == (9, FAILED, 3, "n-v100", "FAILED")
    assert run.ended_at >= run.started_at > 0
