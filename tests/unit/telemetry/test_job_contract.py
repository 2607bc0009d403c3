"""The job contract, job side (telemetry.agent.contract) and as the runner sees it: environment,
progress and checkpoint lines, the preemption notice, exit status 75. Signals go to real
subprocesses."""
import io
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from telemetry.agent import contract, progress, simjob
from telemetry.agent.jobs import Assignment, simulated_command
from telemetry.agent.runner import JobProcess

from .test_agent_runner import python, wait_for

ROOT = Path(__file__).resolve().parents[3]


def test_a_first_run_outside_an_executor_starts_afresh():
    job = contract.Job.from_environment({}, handle_sigterm=False)
    assert (job.resume_step, job.resume_checkpoint, job.checkpoint_dir, job.grace_s) == (
        0, None, Path("checkpoints"), 60)
    assert not job.preemption_requested


def test_the_executor_says_where_to_resume_and_the_grace_period(tmp_path):
    job = contract.Job.from_environment({
        "GOGH_RESUME_STEP": "1200", "GOGH_RESUME_CHECKPOINT": str(tmp_path / "step-1200.pt"),
        "GOGH_CHECKPOINT_DIR": str(tmp_path), "GOGH_PREEMPT_GRACE_S": "90",
    }, handle_sigterm=False)
    assert (job.resume_step, job.resume_checkpoint, job.checkpoint_dir, job.grace_s) == (
        1200, tmp_path / "step-1200.pt", tmp_path, 90)
    blank = contract.Job.from_environment({"GOGH_RESUME_CHECKPOINT": " "}, handle_sigterm=False)
    assert blank.resume_checkpoint is None


@pytest.mark.parametrize("name, value", [("GOGH_RESUME_STEP", "x"), ("GOGH_RESUME_STEP", "-3"),
                                         ("GOGH_PREEMPT_GRACE_S", "1.5")])
def test_a_malformed_variable_is_named(name, value):
    with pytest.raises(ValueError, match=name):
        contract.Job.from_environment({name: value}, handle_sigterm=False)


def test_progress_and_checkpoint_lines_are_what_the_agent_parses():
    out = io.StringIO()
    job = contract.Job(stream=out)
    job.progress(7, total=10)
    job.progress(8)
    job.checkpoint(8, "/shared/ckpt/job 3/step-8.pt")
    with pytest.raises(ValueError):
        job.checkpoint(9, " ")
    lines = out.getvalue().splitlines()
    assert [progress.parse(line) for line in lines] == [(7, 10), (8, None), None]
    assert progress.parse_checkpoint(lines[2]) == (8, "/shared/ckpt/job 3/step-8.pt")
    assert progress.parse_checkpoint(lines[0]) is None


@pytest.mark.parametrize(
    "line, parsed",
    [
        ("GOGH_CHECKPOINT step=0 path=/c/step-0.pt", (0, "/c/step-0.pt")),
        ("GOGH_CHECKPOINT step=12 path=relative dir/with  spaces ", (12, "relative dir/with  spaces ")),
        ("GOGH_CHECKPOINT step=12 path=", None),
        ("GOGH_CHECKPOINT step=12 path=   ", None),
        ("GOGH_CHECKPOINT step=-1 path=/c", None),
        ("GOGH_CHECKPOINT step=1.5 path=/c", None),
        ("GOGH_CHECKPOINT step= path=/c", None),
        ("GOGH_CHECKPOINT path=/c step=3", None),
        ("GOGH_CHECKPOINT step=3 path=/c\x00d", None),
        ("GOGH_CHECKPOINT step=3 path=/" + "c" * 1000, None),
        ("saved GOGH_CHECKPOINT step=3 path=/c", None),
    ],
)
def test_checkpoint_lines(line, parsed):
    assert progress.parse_checkpoint(line) == parsed


def test_save_checkpoint_writes_renames_reports_and_keeps_the_newest(tmp_path):
    out = io.StringIO()
    job = contract.Job(checkpoint_dir=tmp_path / "ckpt", stream=out)
    seen = []

    def write(step):
        def writer(path):
            seen.append((path.name, out.getvalue().count("\n")))  # not reported while it is written
            path.write_text(str(step))
        return writer

    for step in (10, 20, 30):
        saved = job.save_checkpoint(step, write(step), keep=2)
    assert saved == tmp_path / "ckpt" / "step-30.pt" and saved.read_text() == "30"
    assert seen == [("step-10.pt.partial", 0), ("step-20.pt.partial", 1), ("step-30.pt.partial", 2)]
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["step-20.pt", "step-30.pt"]
    assert [progress.parse_checkpoint(line)[0] for line in out.getvalue().splitlines()] == [10, 20, 30]
    assert progress.parse_checkpoint(out.getvalue().splitlines()[-1])[1] == str(saved.resolve())


def test_a_failed_write_reports_nothing_and_leaves_no_checkpoint(tmp_path):
    out = io.StringIO()
    job = contract.Job(checkpoint_dir=tmp_path, stream=out)

    def broken(path):
        path.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        job.save_checkpoint(5, broken)
    assert out.getvalue() == "" and list(tmp_path.iterdir()) == []


CONTRACT_JOB = """
import sys, time
from telemetry.agent import contract
job = contract.Job.from_environment()
print("env", job.resume_step, job.resume_checkpoint, job.checkpoint_dir, job.grace_s, flush=True)
step = job.resume_step
while True:
    step += 1
    job.progress(step)
    if step % 5 == 0 or job.preemption_requested:
        job.save_checkpoint(step, lambda path: path.write_text(str(step)), suffix=".txt")
    if job.preemption_requested:
        job.exit_preempted()
    time.sleep(0.02)
"""


def test_a_job_under_the_contract_resumes_checkpoints_and_exits_75_on_sigterm(tmp_path):
    """The runner gives it the contract's environment (and creates its checkpoint folder),
    counts its steps from the resume step, keeps its newest checkpoint, and on SIGTERM the job
    checkpoints and exits 75 within its grace period."""
    resume = tmp_path / "old" / "step-10.txt"
    job = JobProcess(job_id=3, command=python(CONTRACT_JOB), environment={"PYTHONPATH": str(ROOT)}, gpu_indexes=[0],
                     log_dir=tmp_path / "logs", resume_step=10, resume_checkpoint=str(resume), grace_s=30)
    assert (job.steps, job.checkpoint) == (10, (10, str(resume)))  # before the run reports anything
    job.start()
    checkpoints = tmp_path / "logs" / "checkpoints" / "job-3"
    assert wait_for(lambda: job.checkpoint[0] >= 20)
    out = (tmp_path / "logs" / "job-3.out").read_text()
    assert out.startswith(f"env 10 {resume} {checkpoints} 30\nGOGH_PROGRESS step=11\n")
    job.request_stop(grace_s=30)
    assert wait_for(lambda: job.exit_code() is not None)
    assert job.exit_code() == contract.PREEMPTED_EXIT_CODE
    step, path = job.checkpoint
    assert step == job.steps and Path(path) == checkpoints / f"step-{step}.txt" and Path(path).read_text() == str(step)


def test_the_newest_checkpoint_wins_and_one_beyond_the_total_is_ignored(tmp_path):
    lines = ["GOGH_PROGRESS step=3 total=50", "GOGH_CHECKPOINT step=40 path=/c/40",
             "GOGH_CHECKPOINT step=20 path=/c/20", "GOGH_CHECKPOINT step=60 path=/c/60",
             "GOGH_CHECKPOINT step=45 path="]
    code = "\n".join(f"print({line!r})" for line in lines)
    job = JobProcess(job_id=4, command=python(code), environment={}, gpu_indexes=[0], log_dir=tmp_path)
    job.start()
    assert wait_for(lambda: job.exit_code() is not None)
    assert job.checkpoint == (40, "/c/40") and (job.steps, job.total) == (40, 50)  # a checkpoint is progress too


def test_a_job_that_ignores_the_contract_is_stopped_all_the_same(tmp_path):
    """A job that never checkpoints: no checkpoint, SIGTERM ends it (its status, not 75)."""
    job = JobProcess(job_id=5, command=python("import time; time.sleep(60)"), environment={}, gpu_indexes=[0],
                     log_dir=tmp_path)
    job.start()
    job.request_stop(grace_s=30)
    assert wait_for(lambda: job.exit_code() is not None)
    assert (job.exit_code(), job.checkpoint, job.steps) == (-signal.SIGTERM, None, 0)


def test_a_second_stop_request_only_shortens_the_grace_period(tmp_path):
    stubborn = python("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n"
                      "time.sleep(60)")
    job = JobProcess(job_id=6, command=stubborn, environment={}, gpu_indexes=[0], log_dir=tmp_path)
    job.start()
    log = tmp_path / "job-6.out"
    assert wait_for(lambda: log.exists() and "up" in log.read_text())
    job.request_stop(grace_s=3600)
    job.request_stop(grace_s=7200)  # longer: ignored
    job.tick()
    assert job.exit_code() is None
    job.request_stop(grace_s=0)  # the fence: SIGKILL now
    job.tick()
    assert wait_for(lambda: job.exit_code() is not None) and job.exit_code() == -signal.SIGKILL


def test_assignments_carry_where_to_resume_and_older_servers_get_defaults():
    item = {"job": 1, "allocations": [3], "gpu_indexes": [0], "gpu_type": "v100", "workload": "w",
            "placed_at": "2026-12-01T10:00:00+00:00"}
    old = Assignment.from_api(item)
    assert (old.resume_step, old.resume_checkpoint, old.preemption_grace_s, old.contract) == (0, "", 60, False)
    new = Assignment.from_api({**item, "resume_step": 400, "resume_checkpoint": "/c/step-400.pt",
                               "preemption_grace_s": 120})
    assert (new.resume_step, new.resume_checkpoint, new.preemption_grace_s, new.contract) == (
        400, "/c/step-400.pt", 120, True)
    assert new.key == old.key  # where it resumes is no reason to restart it


def test_the_contract_module_works_copied_alone(tmp_path):
    """No dependency beyond the standard library: a job may copy the one file."""
    (tmp_path / "contract.py").write_bytes((ROOT / "telemetry/agent/contract.py").read_bytes())
    script = ("import contract, os, signal\njob = contract.Job.from_environment()\njob.progress(job.resume_step + 1)\n"
              "os.kill(os.getpid(), signal.SIGTERM)\nassert job.preemption_requested\n"
              "job.save_checkpoint(4, lambda p: p.write_text('state'), suffix='.bin')\njob.exit_preempted()\n")
    done = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, env={"PYTHONPATH": str(tmp_path), "GOGH_RESUME_STEP": "3",
                                           "GOGH_CHECKPOINT_DIR": "ckpt", "PATH": os.environ["PATH"]})
    assert done.returncode == 75, done.stderr
    assert done.stdout.splitlines() == ["GOGH_PROGRESS step=4",
                                        f"GOGH_CHECKPOINT step=4 path={tmp_path / 'ckpt' / 'step-4.bin'}"]
    assert (tmp_path / "ckpt" / "step-4.bin").read_text() == "state"


# --- the simulated job follows the contract

def fake_time(step_s=0.25):
    """(clock, sleep): every sleep advances the clock by `step_s`."""
    now = [0.0]

    def sleep(_):
        now[0] += step_s

    return (lambda: now[0]), sleep


def test_a_simulated_job_resumes_at_its_step_and_checkpoints_every_interval(tmp_path):
    out = io.StringIO()
    job = contract.Job(checkpoint_dir=tmp_path, stream=out)
    clock, sleep = fake_time()
    code = simjob.run(rate=8.0, steps=120, noise=0.0, rng=random.Random(0), clock=clock, sleep=sleep, job=job,
                      start=100, checkpoint_every_s=1.0)
    lines = out.getvalue().splitlines()
    assert code == 0 and progress.parse(lines[0]) == (100, 120) and progress.parse(lines[-1]) == (120, 120)
    checkpoints = [progress.parse_checkpoint(line) for line in lines if progress.parse_checkpoint(line)]
    assert [step for step, _ in checkpoints] == [108, 116]  # every second (8 steps), none at the end
    assert json.loads(Path(checkpoints[-1][1]).read_text()) == {"step": 116}
    assert simjob.resume_step(contract.Job(resume_checkpoint=Path(checkpoints[-1][1]))) == 116


def test_a_simulated_job_checkpoints_and_exits_75_on_its_preemption_notice(tmp_path):
    out = io.StringIO()
    job = contract.Job(checkpoint_dir=tmp_path, stream=out)
    clock, advance = fake_time()

    def sleep(seconds):
        advance(seconds)
        if clock() >= 0.75:
            job._on_sigterm(signal.SIGTERM, None)

    code = simjob.run(rate=8.0, steps=1000, noise=0.0, rng=random.Random(0), clock=clock, sleep=sleep, job=job,
                      checkpoint_every_s=60.0)
    lines = out.getvalue().splitlines()
    assert code == contract.PREEMPTED_EXIT_CODE
    assert progress.parse(lines[-2]) == (6, 1000) and progress.parse_checkpoint(lines[-1])[0] == 6


def test_a_simulated_job_that_never_checkpoints_loses_everything(tmp_path):
    out = io.StringIO()
    job = contract.Job(checkpoint_dir=tmp_path / "ckpt", stream=out)
    job._on_sigterm(signal.SIGTERM, None)
    clock, sleep = fake_time()
    assert simjob.run(rate=8.0, steps=100, noise=0.0, rng=random.Random(0), clock=clock, sleep=sleep, job=job,
                      start=40) == contract.PREEMPTED_EXIT_CODE
    assert out.getvalue() == "GOGH_PROGRESS step=40 total=100\n" and not (tmp_path / "ckpt").exists()


def run_simjob(tmp_path, env, *args):
    return subprocess.Popen(
        [sys.executable, "-m", "telemetry.agent.simjob", "--workload", "ResNet-50 (batch size 64)", "--gpu-type",
         "v100", "--steps", "100000", "--speedup", "50", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "GOGH_CHECKPOINT_DIR": str(tmp_path / "ckpt"), **env},
    )


def test_a_simulated_job_process_resumes_from_its_checkpoint_and_stops_on_sigterm(tmp_path):
    resume = tmp_path / "step-500.json"
    resume.write_text(json.dumps({"step": 500}))
    proc = run_simjob(tmp_path, {"GOGH_RESUME_STEP": "500", "GOGH_RESUME_CHECKPOINT": str(resume)},
                      "--checkpoint-interval-s", "0.3")
    first = proc.stdout.readline()
    while progress.parse(first) is None:
        first = proc.stdout.readline()  # the rate line comes first
    assert progress.parse(first) == (500, 100000)
    line = proc.stdout.readline()
    while progress.parse_checkpoint(line.rstrip("\n")) is None:
        line = proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    rest = [line.rstrip("\n"), *proc.stdout.read().splitlines()]
    assert proc.wait(timeout=10) == contract.PREEMPTED_EXIT_CODE
    step, path = progress.parse_checkpoint(rest[-1])  # its last word: a checkpoint of its last step
    assert all(parsed[0] <= step for parsed in map(progress.parse, rest) if parsed)
    assert step > 500 and json.loads(Path(path).read_text()) == {"step": step}


def test_a_simulated_job_that_cannot_read_its_checkpoint_fails_saying_so(tmp_path):
    proc = run_simjob(tmp_path, {"GOGH_RESUME_STEP": "500", "GOGH_RESUME_CHECKPOINT": str(tmp_path / "gone.json")})
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "cannot resume from" in err and "Traceback" not in err and out == ""


def test_the_agent_runs_simulated_jobs_with_its_checkpoint_interval(tmp_path):
    item = {"job": 1, "allocations": [3], "gpu_indexes": [0], "gpu_type": "v100", "workload": "w", "resume_step": 0}
    command, _ = simulated_command(Assignment.from_api(item), seed=0, speedup=1.0, partner_path=tmp_path / "p",
                                   checkpoint_interval_s=30.0)
    assert "--checkpoint-interval-s 30.0" in command
