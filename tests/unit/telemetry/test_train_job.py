"""The device check's real PyTorch job (tests/device/train_job.py) and docs/jobs.md's example
under the job contract, as real subprocesses on the CPU (train_job: --model tiny): each
checkpoints, gets SIGTERM, checkpoints and exits 75, and a second run given that checkpoint
resumes at its step."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import torch

from telemetry.agent import contract, progress

ROOT = Path(__file__).resolve().parents[3]
TRAIN_JOB = ROOT / "tests" / "device" / "train_job.py"


def start(script: Path, tmp_path: Path, *args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "GOGH_CHECKPOINT_DIR": str(tmp_path / "ckpt"),
                                 **env})


def read_until_checkpoint(proc: subprocess.Popen) -> list[str]:
    lines = []
    while not lines or progress.parse_checkpoint(lines[-1]) is None:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        lines.append(line.rstrip("\n"))
    return lines


def preempt_and_resume(script: Path, tmp_path: Path, *args: str) -> None:
    """Run `script` until its first checkpoint, SIGTERM it (checkpoint, exit 75), then run it
    again from its last checkpoint to the end."""
    first = start(script, tmp_path, "--steps", "100000", *args)
    lines = read_until_checkpoint(first)
    assert progress.parse(next(line for line in lines if progress.parse(line))) == (0, 100000)
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=60)
    lines += out.splitlines()
    assert first.returncode == contract.PREEMPTED_EXIT_CODE, err
    step, path = [parsed for parsed in map(progress.parse_checkpoint, lines) if parsed][-1]
    assert step == max(parsed[0] for parsed in map(progress.parse, lines) if parsed) and step > 0
    assert torch.load(path)["step"] == step

    second = start(script, tmp_path, "--steps", str(step + 15), *args, GOGH_RESUME_STEP=str(step),
                   GOGH_RESUME_CHECKPOINT=path)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    steps = [parsed[0] for parsed in map(progress.parse, out.splitlines()) if parsed]
    assert steps[0] == step and steps[-1] == step + 15 and steps == sorted(steps)  # absolute steps, from there
    assert f"resumed at step {step} from {path}" in out


def test_the_device_jobs_tiny_model_checkpoints_is_preempted_and_resumes(tmp_path):
    preempt_and_resume(TRAIN_JOB, tmp_path, "--model", "tiny", "--batch-size", "4", "--checkpoint-every", "20")


def test_the_documented_pytorch_example_runs_as_written(tmp_path):
    section = (ROOT / "docs" / "jobs.md").read_text().split("## A complete PyTorch example", 1)[1]
    example = tmp_path / "train.py"
    example.write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    preempt_and_resume(example, tmp_path, "--checkpoint-every", "20")
