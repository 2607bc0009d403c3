"""One job as a real subprocess: started with its GPUs, watched for progress, stopped politely.

The command runs under `bash -c` in its own process group (so stopping it reaches every
process it started), with the job's environment, CUDA_VISIBLE_DEVICES set to its GPU indexes
on this node, and stdout/stderr appended to job-<id>.out / job-<id>.err in the log folder.
Progress, checkpoints, the suite's measurement lines and a service's traffic come from the line
protocol of telemetry.agent.progress on stdout;
steps per second are measured over a sliding window of the agent's own clock. The job contract's
environment (telemetry.agent.contract) tells the job where to resume, where to write
checkpoints and its grace period; its steps are absolute, so a resumed run's count starts at the
resume step. Stopping sends SIGTERM, waits a grace period and then SIGKILLs whatever is left:
`request_stop` starts that and `tick` finishes it, so the agent's loop never blocks on one job.
"""
import os
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

from . import contract, progress

RATE_WINDOW_S = 30.0
#: After the job's process ends, how long its remaining output may take to arrive.
OUTPUT_DRAIN_S = 2.0


class JobProcess:
    def __init__(self, *, job_id: int, command: str, environment: dict, gpu_indexes: list[int], log_dir: Path,
                 checkpoint_dir: Path | None = None, resume_step: int = 0, resume_checkpoint: str = "",
                 grace_s: int = contract.DEFAULT_GRACE_S, clock=time.monotonic):
        self.job_id = job_id
        self._command, self._gpu_indexes, self._clock = command, gpu_indexes, clock
        self.checkpoint_dir = Path(checkpoint_dir or Path(log_dir) / "checkpoints" / f"job-{job_id}").absolute()
        self._env = {
            **os.environ,
            **{str(key): str(value) for key, value in environment.items()},
            "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_indexes)),
            "GOGH_JOB_ID": str(job_id),
            "PYTHONUNBUFFERED": "1",
            contract.RESUME_STEP: str(resume_step),
            contract.RESUME_CHECKPOINT: resume_checkpoint,
            contract.CHECKPOINT_DIR: str(self.checkpoint_dir),
            contract.PREEMPT_GRACE_S: str(grace_s),
        }
        self.stdout_log = Path(log_dir) / f"job-{job_id}.out"
        self.stderr_log = Path(log_dir) / f"job-{job_id}.err"
        self.steps, self.total = resume_step, None
        # The run's latest checkpoint (step, path): the one it resumed from until it makes one.
        self.checkpoint: tuple[int, str] | None = (resume_step, resume_checkpoint) if resume_checkpoint else None
        self.stopping = False
        self.stop_reason = ""
        self._measurements: list[str] = []  # measurement lines not yet delivered to the control plane
        self._traffic: tuple[float, float | None] | None = None  # the latest traffic line not yet reported
        # The control plane refused this run's traffic (a job of no service, or one from before
        # services): its reports go on without it.
        self.traffic_refused = False
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
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
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
                line = line.rstrip("\n")
                if (parsed := progress.parse(line)) is not None:
                    self._note(*parsed)
                elif (checkpoint := progress.parse_checkpoint(line)) is not None:
                    self._note_checkpoint(*checkpoint)
                elif (measurement := progress.parse_measurement(line)) is not None:
                    with self._lock:
                        self._measurements.append(measurement)
                elif (traffic := progress.parse_traffic(line)) is not None:
                    with self._lock:
                        self._traffic = traffic

    def _note(self, step: int, total: int | None) -> None:
        now = self._clock()
        with self._lock:
            self.steps = max(self.steps, step)
            self.total = total or self.total
            self._points.append((now, self.steps))
            while len(self._points) > 2 and now - self._points[0][0] > RATE_WINDOW_S:
                self._points.popleft()

    def _note_checkpoint(self, step: int, path: str) -> None:
        """The newest checkpoint wins; one beyond the job's total steps is not one (the control
        plane would refuse every report that carried it). A checkpoint at step S means S steps
        are done."""
        with self._lock:
            if (self.total is not None and step > self.total) or (self.checkpoint and step < self.checkpoint[0]):
                return
            self.checkpoint = (step, path)
        self._note(step, None)

    def measurements(self, limit: int) -> list[str]:
        """The oldest `limit` measurement lines not yet delivered (their JSON), for a report."""
        with self._lock:
            return self._measurements[:limit]

    def delivered(self, count: int) -> None:
        """The control plane took the oldest `count` measurement lines."""
        with self._lock:
            del self._measurements[:count]

    def take_traffic(self) -> tuple[float, float | None] | None:
        """(requests/s, P99 ms or None) of the latest traffic line since the last call, None when
        none came: each line is reported once, and a lost report is overtaken by the next line."""
        with self._lock:
            traffic, self._traffic = self._traffic, None
        return traffic

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

    def request_stop(self, grace_s: float, why: str = "") -> None:
        """SIGTERM the job's process group now; `tick` sends SIGKILL after `grace_s`. Asked
        again while stopping, only a shorter grace period counts (no second SIGTERM). `why`: the
        first reason asked, for its final report."""
        kill_at = self._clock() + grace_s
        if self.stopping:
            self._kill_at = min(self._kill_at, kill_at)
            return
        self.stopping = True
        self.stop_reason = why
        self._kill_at = kill_at
        self._signal(signal.SIGTERM)

    def tick(self) -> None:
        if self.stopping and self._proc.poll() is None and self._clock() >= self._kill_at:
            self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self._proc.pid, signum)
        except ProcessLookupError:
            pass  # already gone
