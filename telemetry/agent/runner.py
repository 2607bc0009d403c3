"""One job as a real subprocess: started with its GPUs, watched for progress, stopped politely.

The command runs under `bash -c` in its own process group (so stopping it reaches every
process it started), with the job's environment, CUDA_VISIBLE_DEVICES set to its GPU indexes
on this node, and stdout/stderr appended to job-<id>.out / job-<id>.err in the log folder.
Progress comes from the line protocol of telemetry.agent.progress on stdout; steps per second
are measured over a sliding window of the agent's own clock. Stopping sends SIGTERM, waits a
grace period and then SIGKILLs whatever is left: `request_stop` starts that and `tick` finishes
it, so the agent's loop never blocks on one job.
"""
import os
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

from . import progress

RATE_WINDOW_S = 30.0
#: After the job's process ends, how long its remaining output may take to arrive.
OUTPUT_DRAIN_S = 2.0


class JobProcess:
    def __init__(self, *, job_id: int, command: str, environment: dict, gpu_indexes: list[int], log_dir: Path,
                 clock=time.monotonic):
        self.job_id = job_id
        self._command, self._gpu_indexes, self._clock = command, gpu_indexes, clock
        self._env = {
            **os.environ,
            **{str(key): str(value) for key, value in environment.items()},
            "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_indexes)),
            "GOGH_JOB_ID": str(job_id),
            "PYTHONUNBUFFERED": "1",
        }
        self.stdout_log = Path(log_dir) / f"job-{job_id}.out"
        self.stderr_log = Path(log_dir) / f"job-{job_id}.err"
        self.steps, self.total = 0, None
        self.stopping = False
        self._points: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()
        self._kill_at: float | None = None
        self._exited_at: float | None = None
        self._proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def start(self) -> None:
        self.stdout_log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.stderr_log, "ab") as stderr:
            self._proc = subprocess.Popen(
                ["bash", "-c", self._command], stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                env=self._env, start_new_session=True, text=True, bufsize=1, errors="replace",
            )
        self._reader = threading.Thread(target=self._read, name=f"job-{self.job_id}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with open(self.stdout_log, "a", encoding="utf-8") as log:
            for line in self._proc.stdout:
                log.write(line)
                log.flush()
                parsed = progress.parse(line.rstrip("\n"))
                if parsed is not None:
                    self._note(*parsed)

    def _note(self, step: int, total: int | None) -> None:
        now = self._clock()
        with self._lock:
            self.steps = max(self.steps, step)
            self.total = total or self.total
            self._points.append((now, self.steps))
            while len(self._points) > 2 and now - self._points[0][0] > RATE_WINDOW_S:
                self._points.popleft()

    def steps_per_s(self) -> float | None:
        """Steps per second over the last RATE_WINDOW_S seconds of progress lines; None before
        two lines some time apart."""
        with self._lock:
            if len(self._points) < 2:
                return None
            (t0, s0), (t1, s1) = self._points[0], self._points[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else None

    def exit_code(self) -> int | None:
        """The exit status once the process has ended and its output is read; None before.
        Never blocks: the agent's loop asks every tick."""
        code = self._proc.poll()
        if code is None:
            return None
        if self._exited_at is None:
            self._exited_at = self._clock()
        if self._reader.is_alive():
            if self._clock() - self._exited_at < OUTPUT_DRAIN_S:
                return None  # the last lines are still on their way
            # Something the job started in the background still holds its stdout: the job is
            # over, and so is what it left behind on its GPUs.
            self._signal(signal.SIGKILL)
            self._reader.join(timeout=1)
        return code

    def request_stop(self, grace_s: float) -> None:
        """SIGTERM the job's process group now; `tick` sends SIGKILL after `grace_s`."""
        if self.stopping:
            return
        self.stopping = True
        self._kill_at = self._clock() + grace_s
        self._signal(signal.SIGTERM)

    def tick(self) -> None:
        if self.stopping and self._proc.poll() is None and self._clock() >= self._kill_at:
            self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self._proc.pid, signum)
        except ProcessLookupError:
            pass  # already gone
