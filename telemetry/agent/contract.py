"""The job contract, job side: what a training script imports to report progress and
checkpoints, learn where to resume, and hear that it is being preempted (docs/jobs.md).

    from telemetry.agent import contract

    job = contract.Job.from_environment()        # also installs the SIGTERM handler
    state = load(job.resume_checkpoint) if job.resume_checkpoint else fresh()
    for step in range(job.resume_step + 1, total + 1):
        train_one_step(state)
        job.progress(step, total=total)
        if step % 500 == 0 or job.preemption_requested:
            job.save_checkpoint(step, lambda path: save(state, path))
        if job.preemption_requested:
            job.exit_preempted()                  # exit status 75: "preempted, resume me"

A benchmark job (the suite, docs/profiling.md) also reports measurements:
`job.measurement({...})` prints one `GOGH_MEASUREMENT <JSON>` line per measured case. A replica
of an inference service (docs/services.md) reports its traffic every few seconds:
`job.traffic(requests_per_s, p99_ms=...)` prints one `GOGH_TRAFFIC rate=<r> [p99_ms=<ms>]` line.

The executor (the agent) sets the environment (GOGH_RESUME_STEP, GOGH_RESUME_CHECKPOINT,
GOGH_CHECKPOINT_DIR, GOGH_PREEMPT_GRACE_S) and reads the lines this module prints on stdout.
Preemption is SIGTERM, then SIGKILL after the job's grace period: the handler only sets a flag,
so the script decides when to stop (after the step it is in, once its checkpoint is written).
Standard library only, and nothing else of the repository: a job may copy this one file.
"""
import json
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROGRESS_PREFIX = "GOGH_PROGRESS"
CHECKPOINT_PREFIX = "GOGH_CHECKPOINT"
MEASUREMENT_PREFIX = "GOGH_MEASUREMENT"
TRAFFIC_PREFIX = "GOGH_TRAFFIC"
#: EX_TEMPFAIL: the job was asked to stop, saved what it could, and wants to be resumed.
PREEMPTED_EXIT_CODE = 75
RESUME_STEP = "GOGH_RESUME_STEP"
RESUME_CHECKPOINT = "GOGH_RESUME_CHECKPOINT"
CHECKPOINT_DIR = "GOGH_CHECKPOINT_DIR"
PREEMPT_GRACE_S = "GOGH_PREEMPT_GRACE_S"
#: Outside an executor (a script run by hand) the job checkpoints here and has this grace.
DEFAULT_CHECKPOINT_DIR = "checkpoints"
DEFAULT_GRACE_S = 60
_CHECKPOINT_NAME = re.compile(r"^step-(\d+)\.")


def progress_line(step: int, total: int | None = None) -> str:
    suffix = f" total={int(total)}" if total else ""
    return f"{PROGRESS_PREFIX} step={int(step)}{suffix}"


def checkpoint_line(step: int, path) -> str:
    return f"{CHECKPOINT_PREFIX} step={int(step)} path={path}"


def measurement_line(measurement: dict) -> str:
    """One measurement as a single line of JSON (strict: NaN and infinity are refused, since
    the reader must get numbers it can store)."""
    return f"{MEASUREMENT_PREFIX} {json.dumps(measurement, allow_nan=False, separators=(',', ':'))}"


def traffic_line(request_rate_rps: float, p99_ms: float | None = None) -> str:
    """A service's traffic: requests per second it answered lately, and the P99 latency (ms) it
    measured over them (None: no request to measure). ValueError for a negative or non-finite
    number: the agent would not read it, so the service must not believe it reported."""
    suffix = ""
    if p99_ms is not None:
        suffix = f" p99_ms={_traffic_number('p99_ms', p99_ms)}"
    return f"{TRAFFIC_PREFIX} rate={_traffic_number('rate', request_rate_rps)}{suffix}"


def _traffic_number(name: str, value: float) -> str:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
    return f"{number:.6g}"


def write_line(line: str, stream=None) -> None:
    """One line, flushed at once: the agent reads a pipe, and a job may be killed any time."""
    stream = stream or sys.stdout
    stream.write(line + "\n")
    stream.flush()


def _int_variable(environ: Mapping, name: str, default: int, minimum: int) -> int:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} is below {minimum}")
    return value


@dataclass
class Job:
    resume_step: int = 0
    resume_checkpoint: Path | None = None
    checkpoint_dir: Path = field(default_factory=lambda: Path(DEFAULT_CHECKPOINT_DIR))
    grace_s: int = DEFAULT_GRACE_S
    stream: object = None  # where the lines go (None: sys.stdout)
    _preempted: bool = field(default=False, init=False, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping | None = None, *, handle_sigterm: bool = True) -> "Job":
        """The job as its executor describes it; a script run by hand gets a first run
        (step 0, no checkpoint, ./checkpoints). With `handle_sigterm` (call it from the main
        thread), SIGTERM sets `preemption_requested` instead of killing the process.
        ValueError names a malformed variable."""
        environ = os.environ if environ is None else environ
        checkpoint = (environ.get(RESUME_CHECKPOINT) or "").strip()
        job = cls(
            resume_step=_int_variable(environ, RESUME_STEP, 0, 0),
            resume_checkpoint=Path(checkpoint) if checkpoint else None,
            checkpoint_dir=Path(environ.get(CHECKPOINT_DIR) or DEFAULT_CHECKPOINT_DIR),
            grace_s=_int_variable(environ, PREEMPT_GRACE_S, DEFAULT_GRACE_S, 0),
        )
        if handle_sigterm:
            signal.signal(signal.SIGTERM, job._on_sigterm)
        return job

    def _on_sigterm(self, signum, frame) -> None:
        self._preempted = True

    @property
    def preemption_requested(self) -> bool:
        """SIGTERM came: checkpoint within `grace_s` seconds and `exit_preempted()`."""
        return self._preempted

    def progress(self, step: int, total: int | None = None) -> None:
        """`step` steps are done (absolute: a resumed run goes on from resume_step)."""
        write_line(progress_line(step, total), self.stream)

    def measurement(self, measurement: dict) -> None:
        """Report a benchmark measurement (the keys of docs/profiling.md's line protocol)."""
        write_line(measurement_line(measurement), self.stream)

    def traffic(self, request_rate_rps: float, p99_ms: float | None = None) -> None:
        """Report a service replica's traffic (docs/services.md): the requests per second it
        answered over its last window, and their P99 latency in ms (None when it answered none).
        The agent forwards the latest one with the job's next report."""
        write_line(traffic_line(request_rate_rps, p99_ms), self.stream)

    def checkpoint(self, step: int, path) -> None:
        """Report a checkpoint of the state after `step` steps, readable at `path`. Call it only
        once the file is complete and durable (written, fsynced, renamed into place):
        `save_checkpoint` does all of that."""
        if not str(path).strip():
            raise ValueError("a checkpoint needs a path")
        write_line(checkpoint_line(step, path), self.stream)

    def checkpoint_path(self, step: int, suffix: str = ".pt") -> Path:
        return self.checkpoint_dir / f"step-{int(step)}{suffix}"

    def save_checkpoint(self, step: int, write: Callable[[Path], None], *, suffix: str = ".pt",
                        keep: int = 2) -> Path:
        """write(temporary path) writes the state; it is fsynced and renamed to
        checkpoint_path(step) (a crash never leaves a half-written checkpoint under that name),
        then reported. A write that raises leaves nothing and reports nothing. Older checkpoints
        of this folder beyond the `keep` newest are deleted (0: none is)."""
        final = self.checkpoint_path(step, suffix)
        final.parent.mkdir(parents=True, exist_ok=True)
        staged = final.with_name(final.name + ".partial")
        try:
            write(staged)
            with open(staged, "rb+") as handle:
                os.fsync(handle.fileno())
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        staged.replace(final)
        _fsync_folder(final.parent)
        self.checkpoint(step, final.resolve())
        self._prune(keep)
        return final

    def _prune(self, keep: int) -> None:
        saved = sorted(
            (int(match[1]), path) for path in self.checkpoint_dir.iterdir()
            if (match := _CHECKPOINT_NAME.match(path.name)) and not path.name.endswith(".partial")
        )
        for _, path in saved[:-keep] if keep > 0 else ():
            path.unlink(missing_ok=True)

    def exit_preempted(self) -> None:
        """End the process with PREEMPTED_EXIT_CODE: "stopped at the executor's request, resume me"."""
        sys.stdout.flush()
        sys.exit(PREEMPTED_EXIT_CODE)


def _fsync_folder(folder: Path) -> None:
    """The rename itself is durable once the folder is synced (POSIX; a no-op where folders
    cannot be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
