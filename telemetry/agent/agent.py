"""The agent's loop: register, then heartbeat, upload samples, follow assignments, report jobs.

Sampling runs in its own thread at a fixed rate, so a slow or unreachable control plane never
delays a reading; everything that talks HTTP runs in the main loop. While the control plane is
unreachable, samples wait in the bounded buffer, jobs keep running, and final job reports wait
to be delivered; on reconnection everything buffered is sent, oldest first.

Stopping (SIGTERM, or `stop()`): the jobs get SIGTERM and the grace period, the buffer gets one
last upload, and the node leaves (POST /api/nodes/{id}/leave/): it goes down at once and its
jobs go back to pending, instead of waiting for the heartbeat timeout.
"""
import logging
import threading
import time
from pathlib import Path

from . import AGENT_VERSION
from .buffer import SampleBuffer
from .client import ControlPlane, Refused, Unreachable
from .config import AgentConfig
from .gpus import GpuBackend
from .jobs import Assignment, partner_file, simulated_command
from .runner import JobProcess

log = logging.getLogger("gogh.agent")
TICK_S = 0.1


class RegistrationRefused(RuntimeError):
    """The control plane refused the registration; the message says why."""


class Agent:
    def __init__(self, *, backend: GpuBackend, client: ControlPlane, config: AgentConfig):
        self.backend, self.client, self.config = backend, client, config
        self.buffer = SampleBuffer(config.buffer_size)
        self.node_id: int | None = None
        self.rejected_samples = 0
        self._stop = threading.Event()
        self._running: dict[int, tuple[Assignment, JobProcess]] = {}
        self._stopping: list[JobProcess] = []
        self._finished_keys: set[tuple] = set()
        self._final_reports: dict[int, dict] = {}
        self._last_progress: dict[int, float] = {}
        self._due = {"heartbeat": 0.0, "upload": 0.0, "poll": 0.0}
        self._reachable = True
        self._last_contact = time.monotonic()
        self._uuids: dict[int, str] = {}
        self._failures_reported: set[int] = set()

    # --- life cycle
    def stop(self) -> None:
        """Ask the agent to leave; safe from a signal handler or another thread."""
        self._stop.set()

    def run(self) -> None:
        """Open the GPUs, register, loop until stop(), then leave. Raises NoGpuDriver or
        RegistrationRefused before the loop starts."""
        self.backend.open()
        try:
            if not self._register():
                return
            sampler = threading.Thread(target=self._sample_loop, name="sampler", daemon=True)
            sampler.start()
            while not self._stop.is_set():
                self.step(time.monotonic())
                self._stop.wait(TICK_S)
            self._shutdown()
            sampler.join(timeout=5)
        finally:
            self.backend.close()

    def _register(self) -> bool:
        devices = self.backend.devices()
        self._uuids = {device.index: device.uuid for device in devices}
        report = {
            "hostname": self.config.hostname, "labels": self.config.labels, "cell": self.config.cell,
            "agent_version": AGENT_VERSION, "gpus": [device.report() for device in devices],
        }
        while not self._stop.is_set():
            try:
                node = self.client.register(report)
            except Refused as exc:
                raise RegistrationRefused(f"the control plane refused the registration of {report['hostname']}: {exc}")
            except Unreachable as exc:
                log.warning("control plane unreachable (%s); registering again in %g s", exc, self.config.retry_s)
                self._stop.wait(self.config.retry_s)
                continue
            self.node_id = node["id"]
            log.info("registered node %s (id %s) with %d GPUs", node["hostname"], node["id"], len(devices))
            return True
        return False

    def _shutdown(self) -> None:
        for job_id in list(self._running):
            self._stop_job(job_id)
        deadline = time.monotonic() + self.config.grace_s + 5
        while self._stopping and time.monotonic() < deadline:
            self._reap_stopped()
            time.sleep(TICK_S)
        self._deliver_final_reports()  # a job that ended just before must not be requeued
        self.flush()
        try:
            self.client.leave(self.node_id)
            log.info("left the control plane")
        except (Unreachable, Refused) as exc:
            log.warning("could not leave cleanly (%s); the node goes down after the heartbeat timeout", exc)

    def _sample_loop(self) -> None:
        interval = self.config.sample_interval_s
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.buffer.extend(self.backend.sample(time.time()))
            except Exception:  # a backend bug must not end sampling for good; say so and go on
                log.exception("sampling the GPUs failed")
            next_at = max(next_at + interval, time.monotonic())
            self._stop.wait(next_at - time.monotonic())

    # --- one turn of the main loop
    def step(self, now: float) -> None:
        if now >= self._due["heartbeat"]:
            self._due["heartbeat"] = now + self.config.heartbeat_interval_s
            self._ask("heartbeat", self.client.heartbeat)
        if now >= self._due["poll"]:
            self._due["poll"] = now + self.config.poll_interval_s
            assignments = self._ask("assignments", self.client.assignments)
            if assignments is not None:
                self.reconcile([Assignment.from_api(item) for item in assignments])
        self._handle_failures()
        self._fence(now)
        self._supervise(now)
        self._reap_stopped()
        self._deliver_final_reports()
        if now >= self._due["upload"]:
            self._due["upload"] = now + self.config.upload_interval_s
            self.flush()
        self.backend.note_busy({i for assignment, _ in self._running.values() for i in assignment.gpu_indexes})

    def _talk(self, call, *args):
        """call(*args), None when unreachable; logs each outage once, and each reconnection."""
        try:
            result = call(*args)
        except Unreachable as exc:
            if self._reachable:
                log.warning("control plane unreachable (%s); buffering samples", exc)
            self._reachable = False
            return None
        if not self._reachable:
            log.info("control plane reachable again; %d samples buffered", len(self.buffer))
            self._reachable = True
        self._last_contact = time.monotonic()
        return result

    def _ask(self, what: str, call):
        """call(node id); None when unreachable or refused. A refusal (the node deleted or taken
        over by an operator, the token revoked) needs a person: it is logged, and the agent keeps
        sampling and running what it runs until then."""
        try:
            return self._talk(call, self.node_id)
        except Refused as exc:
            log.error("control plane refused the %s of node %s: %s", what, self.node_id, exc)
            return None

    def _fence(self, now: float) -> None:
        """Out of touch for longer than the control plane waits before it requeues a silent
        node's jobs: stop them here, so a job never runs on two nodes at once."""
        if self._running and now - self._last_contact > self.config.fence_after_s:
            log.warning("no contact for %g s: the control plane has requeued this node's jobs; stopping them",
                        self.config.fence_after_s)
            for job_id in list(self._running):
                self._stop_job(job_id)

    def _handle_failures(self) -> None:
        """A GPU died: the jobs on it stop now (they cannot progress), and the control plane
        hears of it until it answers; it marks the GPU failed and puts those jobs back to
        pending, to be placed elsewhere. reconcile() never starts a job on a failed GPU."""
        failed = self.backend.failures()
        if not failed:
            return
        for job_id, (assignment, _) in list(self._running.items()):
            if failed.keys() & set(assignment.gpu_indexes):
                log.warning("job %s: GPU %s failed; stopping it", job_id, sorted(failed.keys() & set(assignment.gpu_indexes)))
                self._stop_job(job_id)
        new = {index: reason for index, reason in failed.items() if index not in self._failures_reported}
        if not new:
            return
        body = [{"uuid": self._uuids[index], "reason": reason[:200]} for index, reason in sorted(new.items())]
        try:
            if self._talk(self.client.report_gpu_failures, self.node_id, body) is None:
                return  # unreachable: told on a later turn
        except Refused as exc:
            log.error("control plane refused the failure report of GPUs %s: %s", sorted(new), exc)
        self._failures_reported |= new.keys()

    def flush(self) -> None:
        """Upload buffered samples, oldest first, in batches, until empty or unreachable. A batch
        the control plane refuses (400/403) is dropped: sending it again would fail again."""
        while batch := self.buffer.peek(self.config.batch_size):
            try:
                if self._talk(self.client.upload_samples, [s.payload() for s in batch], self.buffer.dropped) is None:
                    return
            except Refused as exc:
                self.rejected_samples += len(batch)
                log.error("control plane refused %d samples: %s", len(batch), exc)
            self.buffer.commit(batch)

    # --- jobs
    def reconcile(self, assignments: list[Assignment]) -> None:
        """Make the running jobs match the assignments: stop what was withdrawn or moved, start
        what is new. A job this agent saw finish is not started again."""
        wanted = {assignment.job_id: assignment for assignment in assignments}
        for job_id, (assignment, process) in list(self._running.items()):
            if job_id not in wanted or wanted[job_id].key != assignment.key:
                log.info("job %s: allocation withdrawn or changed; stopping it", job_id)
                self._stop_job(job_id)
            elif wanted[job_id] != assignment:  # same GPUs, new allocations: its partners changed
                self._running[job_id] = (wanted[job_id], process)
                if self.config.simulate_seed is not None:
                    self._write_partner(wanted[job_id])
        failed = self.backend.failures().keys()
        for job_id, assignment in wanted.items():
            if failed & set(assignment.gpu_indexes):
                continue  # the control plane will move it once it hears of the failure
            if job_id not in self._running and assignment.key not in self._finished_keys:
                self._start_job(assignment)
        # A finished job is listed until the control plane has its end: forget it once it is not.
        self._finished_keys &= {assignment.key for assignment in assignments}

    def _start_job(self, assignment: Assignment) -> None:
        command, environment = assignment.command, assignment.environment
        if self.config.simulate_seed is not None:
            command, extra = simulated_command(
                assignment, seed=self.config.simulate_seed, speedup=self.config.simulate_speedup,
                partner_path=self._write_partner(assignment),
            )
            environment = {**environment, **extra}
        process = JobProcess(
            job_id=assignment.job_id, command=command, environment=environment,
            gpu_indexes=list(assignment.gpu_indexes), log_dir=self.config.log_dir,
        )
        if not command.strip():
            self._finish(assignment, process, "failed", exit_code=None, message="The job has no command.")
            return
        try:
            process.start()
        except OSError as exc:
            self._finish(assignment, process, "failed", exit_code=None, message=f"Could not start: {exc}")
            return
        log.info("job %s started on GPUs %s (pid %s)", assignment.job_id, assignment.gpu_indexes, process.pid)
        self._running[assignment.job_id] = (assignment, process)
        self._report_progress(process, time.monotonic())

    def _write_partner(self, assignment: Assignment) -> Path:
        """The simulated job's partner file, one workload name per line (simjob reads it every
        interval)."""
        path = partner_file(self.config.log_dir, assignment.job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_suffix(".partner.new")
        staged.write_text("".join(f"{partner}\n" for partner in assignment.partners))
        staged.replace(path)  # atomic: the job never reads a half-written list
        return path

    def _stop_job(self, job_id: int) -> None:
        _, process = self._running.pop(job_id)
        process.request_stop(self.config.grace_s)
        self._stopping.append(process)

    def _reap_stopped(self) -> None:
        for process in list(self._stopping):
            process.tick()
            if process.exit_code() is not None:
                self._stopping.remove(process)

    def _supervise(self, now: float) -> None:
        for job_id, (assignment, process) in list(self._running.items()):
            code = process.exit_code()
            if code is not None:
                del self._running[job_id]
                status = "succeeded" if code == 0 else "failed"
                message = "" if code == 0 else f"Exited with status {code}; see {process.stderr_log} on the node."
                self._finish(assignment, process, status, exit_code=code, message=message)
            elif now - self._last_progress.get(job_id, 0.0) >= self.config.progress_interval_s:
                self._report_progress(process, now)

    def _report_progress(self, process: JobProcess, now: float) -> None:
        self._last_progress[process.job_id] = now
        report = self._report(process, "running", exit_code=None, message="")
        try:
            self._talk(self.client.job_progress, report)
        except Refused as exc:
            log.info("job %s: progress refused (%s); the next poll will tell", process.job_id, exc)

    def _finish(self, assignment: Assignment, process: JobProcess, status: str, *, exit_code, message: str) -> None:
        log.info("job %s %s (exit status %s)", assignment.job_id, status, exit_code)
        self._finished_keys.add(assignment.key)
        self._last_progress.pop(assignment.job_id, None)
        self._final_reports[assignment.job_id] = self._report(process, status, exit_code=exit_code, message=message)

    def _deliver_final_reports(self) -> None:
        """A job's end must reach the control plane: kept until delivered or refused."""
        for job_id, report in list(self._final_reports.items()):
            try:
                if self._talk(self.client.job_progress, report) is None:
                    return
            except Refused as exc:
                log.warning("job %s: final report refused (%s)", job_id, exc)
            del self._final_reports[job_id]

    def _report(self, process: JobProcess, status: str, *, exit_code, message: str) -> dict:
        return {
            "job": process.job_id, "status": status, "steps": process.steps, "total_steps": process.total,
            "steps_per_s": self._true_rate(process.steps_per_s()), "exit_code": exit_code, "message": message[:300],
        }

    def _true_rate(self, steps_per_s: float | None) -> float | None:
        """What the job would do in real time: a simulated job runs --speedup times faster to
        shorten demos, but the catalog and P2 must learn the simulated GPU's real throughput."""
        if steps_per_s is None or self.config.simulate_seed is None:
            return steps_per_s
        return steps_per_s / self.config.simulate_speedup
