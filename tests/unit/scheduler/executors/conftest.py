"""Slurm stood in for at the subprocess call, with real output of Slurm 22.05.8 (the
`.ci/slurm` cluster) recorded under recorded/: `squeue --json` with a running gpu:v100:2 job
(gogh-101), two shard:1 jobs on one GPU of n-p100 (gogh-102, gogh-103), a job GOGH did not
submit (someone-else, gpu:k80:1), a pending one (gogh-105, Resources) and a failed one
(gogh-106, exit 3); `sinfo --json` of the same moment, and again with n-k80 drained ("fan
broken"); `sacct -c -P -o jobid,jobname,state,nodelist,start,end,exitcode` (the jobcomp file)
once they had all ended."""
import subprocess
from pathlib import Path

import pytest

RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


class FakeSlurm:
    """subprocess.run as the executor calls it: each call recorded (argv, input, env, timeout);
    the answer for a program is `answers[program]`: a CompletedProcess's (stdout, stderr,
    returncode), or an exception to raise."""

    def __init__(self, **answers):
        self.answers = answers
        self.calls: list[dict] = []

    def __call__(self, argv, *, input=None, env=None, timeout=None, capture_output, text, check):
        assert capture_output and text and not check
        self.calls.append({"argv": list(argv), "input": input, "env": env, "timeout": timeout})
        answer = self.answers[Path(argv[0]).name]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            answer = answer(list(argv))
        stdout, stderr, returncode = answer if isinstance(answer, tuple) else (answer, "", 0)
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    def programs(self) -> list[str]:
        return [Path(call["argv"][0]).name for call in self.calls]


@pytest.fixture
def slurm():
    """A FakeSlurm answering sinfo and squeue with the recorded output, sacct with the
    recorded accounting."""
    return FakeSlurm(sinfo=recorded("sinfo.json"), squeue=recorded("squeue.json"), sacct=recorded("sacct.txt"))
