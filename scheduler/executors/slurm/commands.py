"""Running one of Slurm's command-line tools: its standard output, or an ExecutorError with the
command line and Slurm's own message.

The subprocess call is the `runner` (subprocess.run's signature), so that tests can stand in
for Slurm with recorded output at exactly that edge. A command that hangs (slurmctld not
answering) ends at its timeout: a sync must never wait on Slurm for long.
"""
import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence

from ..base import ExecutorError

#: The most of a failing command's message an ExecutorError keeps (it ends up in a job's reason).
MESSAGE_LIMIT = 500

Runner = Callable[..., subprocess.CompletedProcess]


def run(
    argv: Sequence[str],
    *,
    bin_dir: str = "",
    timeout_s: float,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    runner: Runner = subprocess.run,
) -> str:
    """`argv` run (its program from `bin_dir` when one is set, else from PATH) with `stdin` as
    its input and `env` as its whole environment (None: this process's); its stdout.
    ExecutorError on a missing program, a timeout or a non-zero exit status."""
    argv = [os.path.join(bin_dir, argv[0]) if bin_dir else argv[0], *argv[1:]]
    command = shlex.join(argv)
    try:
        done = runner(argv, input=stdin, env=None if env is None else dict(env), timeout=timeout_s,
                      capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ExecutorError(command, f"{argv[0]} not found (Slurm's client, GOGH_SLURM_BIN_DIR)") from None
    except subprocess.TimeoutExpired:
        raise ExecutorError(command, f"no answer in {timeout_s:g} s (is slurmctld up?)") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in an argument or the environment
        raise ExecutorError(command, f"cannot run it: {exc}") from None
    if done.returncode != 0:
        raise ExecutorError(command, _failure(done))
    return done.stdout


def _failure(done: subprocess.CompletedProcess) -> str:
    """What a failed command said (its stderr, else its stdout), on one line and trimmed."""
    said = " ".join((done.stderr or done.stdout or "").split())
    if len(said) > MESSAGE_LIMIT:
        said = said[: MESSAGE_LIMIT - 3] + "..."
    return said or f"exit status {done.returncode}"
