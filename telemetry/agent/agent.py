"""The agent's loop: register, then heartbeat, upload samples, follow assignments, report jobs.

Four threads, so that no slow request delays what must not wait:
- the sampler reads the GPUs at a fixed rate, whatever the control plane does;
- the heartbeat thread heartbeats through a client of its own, so a slow sample upload,
  assignment poll or job report never delays a heartbeat;
- the fence thread stops this node's jobs once it has been out of touch too long (below);
- the main loop polls assignments, starts and stops jobs, reports all its jobs' progress in one
  request a turn (POST /api/telemetry/job-progress/batch/), and uploads samples for at most
  one upload interval a turn, so a backlog never keeps it from its jobs.
While the control plane is unreachable, or answers 429/503 with Retry-After (the agent waits
that long before it sends that kind of request again), samples wait in the bounded buffer,
jobs keep running, and final job reports wait to be delivered; afterwards everything buffered
is sent, oldest first.

Fencing (a job never runs on two nodes): the control plane gives a silent node up after its
heartbeat timeout and places its jobs elsewhere. The agent stops them first: by fence time
after it sent its last SUCCESSFUL heartbeat (any other request proves nothing about the
node's standing), its jobs are gone (SIGTERM fence time less the grace period before, SIGKILL
at it). Fence time is the lower of --fence-after and what the control plane asks for in its
heartbeat and registration answers (fence_after_s, derived from its timeout), so the two
configurations need not agree. Assignments asked for before the agent was in touch again are
not acted upon: they may list jobs the control plane has since placed elsewhere.

Stopping (SIGTERM, or `stop()`): the node stops taking work (POST /api/nodes/{id}/leaving/:
draining until it leaves), the jobs get SIGTERM and the grace period, the buffer gets one last
upload, and the node leaves (POST /api/nodes/{id}/leave/): it goes down at once and its jobs go
back to pending, instead of waiting for the heartbeat timeout.

Observer (config.observe, --observe): on a node whose jobs a cluster manager (Slurm) runs, the
agent registers, heartbeats, samples and reports dead GPUs, but never asks for assignments, so
it never runs a job; stopping, it uploads what is buffered and does not leave: whether the node
is up is the manager's to say, not its observer's. It never sets a power limit either: the
node's jobs are the manager's, and a limit on a GPU it does not schedule would slow them
behind its back (it still reports the limits in force).

Power limits (power.py): each assignments poll applies the limit chosen for each assigned GPU
and puts the default back on GPUs no job is assigned; stopping puts it back on every GPU the
agent changed. Heartbeats report the limit in force on each GPU and why the last one asked for
was refused, to a control plane whose registration answer shows it knows them.

The job contract (docs/jobs.md): a job whose allocation is withdrawn or changed gets its own
grace period (the control plane's preemption_grace_s) to checkpoint; the fence, a lost GPU and
the agent's own stop give it the lower of that and --grace-period. Once a process the agent
stopped has exited (whatever its status), or a job exited 75 by itself, its final report says
"preempted", with the steps and the latest checkpoint it reported: the control plane resumes
it there. Every report carries the run's latest checkpoint.

Services (docs/services.md): a replica's latest GOGH_TRAFFIC line since its last report goes
with its next progress report ("traffic"). A control plane that refuses it (400 naming
"traffic": a job of no service, or a control plane from before services) refused that report's
progress too: the progress goes again at once without it, and that run's traffic is not sent
again, so a job never loses its progress reports to its traffic.
"""
import logging
import math
import threading
import time
from pathlib import Path

from . import AGENT_VERSION
from .buffer import SampleBuffer
from .client import ControlPlane, Refused, RetryLater, Unreachable
from .config import AgentConfig
from .contract import PREEMPTED_EXIT_CODE
from .gpus import HEALTH_FIELDS, GpuBackend, GpuSample
from .jobs import Assignment, pace_file, partner_file, simulated_command
from .power import PowerLimiter
from .runner import JobProcess

log = logging.getLogger("gogh.agent")
TICK_S = 0.1
#: The last sample upload when the agent stops gets this long at most.
SHUTDOWN_FLUSH_S = 10.0
#: How long the agent waits for its heartbeat thread's last request before it leaves (a later
#: heartbeat would bring the node back up).
HEARTBEAT_JOIN_S = 30.0
#: Answers to a job report that settle it: delivered (200), or refused in a way resending
#: cannot change (400 bad report, 403 not this account's job, 404, 409 no longer allocated).
SETTLED = frozenset({200, 400, 403, 404, 409})
#: Requests the loop would send on every turn: after a failure they wait retry_s.
EVERY_TURN = frozenset({"progress", "failures"})
#: GOGH_MEASUREMENT lines a job report carries at most (the control plane's limit); the rest
#: go with the next report.
MEASUREMENTS_PER_REPORT = 100
#: What a registration reports of each GPU's power limits (a control plane from before refuses them).
POWER_LIMIT_FIELDS = ("power_limit_min_w", "power_limit_max_w", "power_limit_default_w", "power_limit_w")
#: Why the agent stopped a job, in its final report (the control plane records it).
WITHDRAWN = "its allocation here was withdrawn or changed"
LEAVING = "the node's agent is stopping and the node leaves"
FENCED = "out of touch with the control plane, which places it elsewhere"
GPU_FAILED = "its GPU failed"


class RegistrationRefused(RuntimeError):
    """The control plane refused the registration; the message says why."""


class Agent:
    def __init__(self, *, backend: GpuBackend, client: ControlPlane, config: AgentConfig):
        self.backend, self.client, self.config = backend, client, config
        self.buffer = SampleBuffer(config.buffer_size)
        self.node_id: int | None = None
        self.rejected_samples = 0
        self._stop = threading.Event()
        # The jobs, the fence and the assignments' trust are shared by the main loop and the
        # fence thread: every change to them holds this lock, and nothing holding it talks HTTP.
        self._lock = threading.RLock()
        self._running: dict[int, tuple[Assignment, JobProcess]] = {}
        self._stopping: list[tuple[Assignment, JobProcess]] = []
        self._finished_keys: set[tuple] = set()
        self._final_reports: dict[int, dict] = {}
        self._last_progress: dict[int, float] = {}
        self._due = {"upload": 0.0, "poll": 0.0}
        self._not_before = {"upload": 0.0, "poll": 0.0, "progress": 0.0, "failures": 0.0}  # Retry-After
        self._reachable = True
        self._heartbeat_client = client.copy()
        self._last_contact = time.monotonic()  # when the last successful heartbeat was sent
        self._fence_after_s = config.fence_after_s
        self._fenced = False
        self._trusted_since = 0.0  # assignments asked for before this may be stale
        self._warned_fence = False
        self._uuids: dict[int, str] = {}
        self._failures_reported: set[int] = set()
        self._heartbeat_body: dict = {}
        self.power = PowerLimiter(backend)
        self._reports_power_limits = False
        self._paces: dict[int, float] = {}  # simulated jobs' pace as last written, by job
        self._health_refused: set[str] = set()  # the samples' health signals (HEALTH_FIELDS) the control plane refused

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
            threads = {
                name: threading.Thread(target=target, name=name, daemon=True)
                for name, target in (("sampler", self._sample_loop), ("heartbeat", self._heartbeat_loop),
                                     ("fence", self._fence_loop))
            }
            for thread in threads.values():
                thread.start()
            while not self._stop.is_set():
                self.step(time.monotonic())
                self._stop.wait(TICK_S)
            threads["heartbeat"].join(timeout=HEARTBEAT_JOIN_S)  # no heartbeat may follow the leave
            threads["fence"].join(timeout=5)
            self._shutdown()
            threads["sampler"].join(timeout=5)
        finally:
            if not self.config.observe:
                self.power.restore_all()
            self.backend.close()

    def _register(self) -> bool:
        devices = self.backend.devices()
        self._uuids = {device.index: device.uuid for device in devices}
        self.power.open(devices)
        report = {
            "hostname": self.config.hostname, "labels": self.config.labels, "cell": self.config.cell,
            "agent_version": AGENT_VERSION, "gpus": [device.report() for device in devices],
        }
        if driver := self.backend.driver_version():
            report["driver_version"] = driver
        while not self._stop.is_set():
            sent = time.monotonic()
            try:
                node = self.client.register(report)
            except Refused as exc:
                if _unknown_field(exc, "driver_version") and report.pop("driver_version", None):
                    continue  # a control plane from before driver versions: register without it
                if _unknown_gpu_fields(exc, POWER_LIMIT_FIELDS) and _without(report["gpus"], POWER_LIMIT_FIELDS):
                    continue  # one from before power limits: register without them
                raise RegistrationRefused(
                    f"the control plane refused the registration of {report['hostname']}: {exc}"
                ) from exc
            except Unreachable as exc:
                log.warning("control plane unreachable (%s); registering again in %g s", exc, self.config.retry_s)
                self._stop.wait(self.config.retry_s)
                continue
            self.node_id = node["id"]
            # A control plane that shows the driver version takes it with every heartbeat.
            self._heartbeat_body = {"driver_version": driver} if driver and "driver_version" in node else {}
            self._reports_power_limits = any("power_limit_w" in gpu for gpu in node.get("gpus") or ())
            self._heard(sent, node)
            log.info("registered node %s (id %s) with %d GPUs", node["hostname"], node["id"], len(devices))
            return True
        return False

    def _shutdown(self) -> None:
        if not self.config.observe:
            self._announce_leaving()
        with self._lock:
            self._supervise()  # a job that ended just before reports its end, not a stop
            self._stop_all(LEAVING)
        deadline = time.monotonic() + self.config.grace_s + 5
        while self._stopping and time.monotonic() < deadline:
            with self._lock:
                self._reap_stopped()
            time.sleep(TICK_S)
        self._report_jobs()  # a job that ended just before must not be requeued
        self.flush(budget_s=SHUTDOWN_FLUSH_S)
        if self.config.observe:
            log.info("observer stopped; the node stays as its cluster manager reports it")
            return
        try:
            self.client.leave(self.node_id)
            log.info("left the control plane")
        except (Unreachable, Refused) as exc:
            log.warning("could not leave cleanly (%s); the node goes down after the heartbeat timeout", exc)

    def _announce_leaving(self) -> None:
        """Before its jobs are stopped, the node stops taking work: otherwise a round may place a
        job there again between that job's stop report and the leave. A control plane that does
        not answer (or predates the call) only loses that: the leave still follows."""
        try:
            self.client.leaving(self.node_id)
        except (Unreachable, Refused) as exc:
            log.warning("could not announce the leave (%s); stopping the jobs anyway", exc)

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

    # --- liveness: heartbeats and the fence, each in its own thread
    def _heartbeat_loop(self) -> None:
        """Heartbeat every interval through a client of its own. A Retry-After is honoured only
        up to the interval: a heartbeat is small, and it is what keeps this node's jobs."""
        interval = self.config.heartbeat_interval_s
        while not self._stop.is_set():
            sent = time.monotonic()
            wait = interval
            try:
                answer = self._heartbeat_client.heartbeat(self.node_id, self._heartbeat_report())
            except RetryLater as exc:
                wait = min(exc.after_s, interval)
                log.warning("control plane busy (%s); heartbeating again in %g s", exc, wait)
            except Unreachable as exc:
                self._note_unreachable(exc)
            except Refused as exc:
                log.error("control plane refused the heartbeat of node %s: %s", self.node_id, exc)
            else:
                self._note_reachable()
                self._heard(sent, answer)
            self._stop.wait(max(0.0, sent + wait - time.monotonic()))

    def _heartbeat_report(self) -> dict:
        if not self._reports_power_limits:
            return self._heartbeat_body
        return {**self._heartbeat_body, "gpus": self.power.report()}

    def _heard(self, sent: float, answer) -> None:
        """A heartbeat (or the registration) sent at `sent` succeeded: the control plane
        recorded it no earlier than that, so the fence counts from then. Adopt the control
        plane's fence time; after a fence, only assignments asked for from now are trusted."""
        with self._lock:
            self._last_contact = max(self._last_contact, sent)
            wanted = answer.get("fence_after_s") if isinstance(answer, dict) else None
            if isinstance(wanted, (int, float)) and math.isfinite(wanted) and wanted > 0:
                self._fence_after_s = min(self.config.fence_after_s, float(wanted))
                self._warn_if_no_room()
            if self._fenced:
                self._fenced = False
                self._trusted_since = time.monotonic()
                log.info("in touch with the control plane again; jobs start from the next assignments")

    def _warn_if_no_room(self) -> None:
        if not self._warned_fence and self._stop_after_s() <= self.config.heartbeat_interval_s:
            self._warned_fence = True
            log.warning("fence time %g s less the grace period (%g s) leaves no room for a heartbeat every %g s: "
                        "jobs may be stopped between heartbeats; lower --heartbeat-interval or --grace-period",
                        self._fence_after_s, self.config.grace_s, self.config.heartbeat_interval_s)

    def _stop_after_s(self) -> float:
        """Seconds after the last successful heartbeat at which the jobs get SIGTERM: their
        grace period before fence time, so SIGKILL lands at fence time at the latest."""
        return max(0.0, self._fence_after_s - self.config.grace_s)

    def _out_of_touch(self, now: float) -> bool:
        return now - self._last_contact > self._stop_after_s()

    def _fence_loop(self) -> None:
        while not self._stop.is_set():
            self._fence(time.monotonic())
            self._stop.wait(TICK_S)

    def _fence(self, now: float) -> None:
        """Out of touch for longer than the control plane waits (less the grace period and its
        margin): stop the jobs here, and finish stopping them (SIGKILL after the grace period)
        even while the main loop waits on a slow request."""
        with self._lock:
            if self._out_of_touch(now):
                if not self._fenced:
                    self._fenced = True
                    self._trusted_since = math.inf
                    if self._running:
                        log.warning("no successful heartbeat for %g s: the control plane gives this node up at its "
                                    "timeout and places its jobs elsewhere; stopping them", self._stop_after_s())
                self._stop_all(FENCED)
            self._reap_stopped()

    # --- one turn of the main loop
    def step(self, now: float) -> None:
        if not self.config.observe and now >= self._due["poll"]:
            self._due["poll"] = now + self.config.poll_interval_s
            self._poll()
        self._handle_failures()
        with self._lock:
            self._supervise()
            self._reap_stopped()
        self._report_jobs()
        if now >= self._due["upload"]:
            self._due["upload"] = now + self.config.upload_interval_s
            self.flush(budget_s=self.config.upload_interval_s)
        with self._lock:
            busy = {i for assignment, _ in self._running.values() for i in assignment.gpu_indexes}
        self.backend.note_busy(busy)

    def _poll(self) -> None:
        """Ask for the assignments and follow them, unless they may be stale: asked for before
        the agent was in touch again after a fence, or it is out of touch now."""
        sent = time.monotonic()
        try:
            assignments = self._send("poll", self.client.assignments, self.node_id)
        except Refused as exc:
            log.error("control plane refused the assignments of node %s: %s", self.node_id, exc)
            return
        if assignments is None:
            return
        with self._lock:
            if self._fenced or sent < self._trusted_since or self._out_of_touch(time.monotonic()):
                return
            self.reconcile([Assignment.from_api(item) for item in assignments])

    def _send(self, kind: str, call, *args):
        """call(*args); None when not sent because the control plane asked this kind of request
        to wait (Retry-After), or when it is unreachable or busy now. Logs each outage once and
        each reconnection; Refused goes to the caller."""
        now = time.monotonic()
        if now < self._not_before[kind]:
            return None
        try:
            result = call(*args)
        except RetryLater as exc:
            self._not_before[kind] = time.monotonic() + exc.after_s
            log.warning("control plane busy (%s); %s waits %g s", exc, kind, exc.after_s)
            return None
        except Unreachable as exc:
            self._note_unreachable(exc)
            if kind in EVERY_TURN:
                self._not_before[kind] = time.monotonic() + self.config.retry_s
            return None
        self._note_reachable()
        return result

    def _note_unreachable(self, exc) -> None:
        if self._reachable:
            log.warning("control plane unreachable (%s); buffering samples", exc)
        self._reachable = False

    def _note_reachable(self) -> None:
        if not self._reachable:
            log.info("control plane reachable again; %d samples buffered", len(self.buffer))
            self._reachable = True

    def _handle_failures(self) -> None:
        """A GPU died: the jobs on it stop now (they cannot progress), and the control plane
        hears of it until it answers; it marks the GPU failed and puts those jobs back to
        pending, to be placed elsewhere. reconcile() never starts a job on a failed GPU."""
        failed = self.backend.failures()
        if not failed:
            return
        with self._lock:
            for job_id, (assignment, _) in list(self._running.items()):
                if failed.keys() & set(assignment.gpu_indexes):
                    log.warning("job %s: GPU %s failed; stopping it", job_id,
                                sorted(failed.keys() & set(assignment.gpu_indexes)))
                    self._stop_job(job_id, self._short_grace(assignment), GPU_FAILED)
        new = {index: reason for index, reason in failed.items() if index not in self._failures_reported}
        if not new:
            return
        body = [{"uuid": self._uuids[index], "reason": reason[:200]} for index, reason in sorted(new.items())]
        try:
            if self._send("failures", self.client.report_gpu_failures, self.node_id, body) is None:
                return  # unreachable: told on a later turn
        except Refused as exc:
            log.error("control plane refused the failure report of GPUs %s: %s", sorted(new), exc)
        self._failures_reported |= new.keys()

    def flush(self, budget_s: float) -> None:
        """Upload buffered samples, oldest first, in batches, until empty, unreachable, told to
        wait, or `budget_s` spent (at least one batch): the loop must get back to its jobs, and
        the rest goes on the next turn. A batch the control plane refuses (400/403) is dropped:
        sending it again would fail again. A busy control plane (429/503) drops nothing."""
        deadline = time.monotonic() + budget_s
        while batch := self.buffer.peek(self.config.batch_size):
            try:
                if self._send("upload", self.client.upload_samples, [self._wire(s) for s in batch],
                              self.buffer.dropped) is None:
                    return
            except Refused as exc:
                unknown = {key for path, key in _health_paths(batch) if _unknown_field(exc, path)}
                if unknown - self._health_refused:
                    self._health_refused |= unknown  # a control plane from before them: the same batch without
                    continue
                self.rejected_samples += len(batch)
                log.error("control plane refused %d samples: %s", len(batch), exc)
            self.buffer.commit(batch)
            if time.monotonic() >= deadline:
                return

    def _wire(self, sample: GpuSample) -> dict:
        """A sample's payload, without the health signals a control plane from before them refused."""
        body = sample.payload()
        for key in self._health_refused:
            body.pop(key, None)
        return body

    # --- jobs
    def reconcile(self, assignments: list[Assignment]) -> None:
        """Make the running jobs match the assignments: stop what was withdrawn or moved, start
        what is new. A job this agent saw finish is not started again."""
        with self._lock:
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
            # A job whose previous run is still stopping, or whose end the control plane has not
            # settled yet, starts on a later poll: the new run resumes from what the previous one
            # saved and reported (an older list does not know it), and a job never runs twice.
            busy = set(self._running) | {process.job_id for _, process in self._stopping} | set(self._final_reports)
            for job_id, assignment in wanted.items():
                if failed & set(assignment.gpu_indexes):
                    continue  # the control plane will move it once it hears of the failure
                if job_id not in busy and assignment.key not in self._finished_keys:
                    self._start_job(assignment)
            # A finished job is listed until the control plane has its end: forget it once it is not.
            self._finished_keys &= {assignment.key for assignment in assignments}
            self.power.follow(assignments, failed)
            for assignment, _ in self._running.values():
                if self._simulated(assignment):
                    self._write_pace(assignment)

    def _simulated(self, assignment: Assignment) -> bool:
        """Whether the job runs as a simulated job (simjob) rather than its own command."""
        return self.config.simulate_seed is not None and not (
            self.config.simulate_run_commands and assignment.command.strip())

    def _start_job(self, assignment: Assignment) -> None:
        command, environment = assignment.command, assignment.environment
        if self._simulated(assignment):
            command, extra = simulated_command(
                assignment, seed=self.config.simulate_seed, speedup=self.config.simulate_speedup,
                partner_path=self._write_partner(assignment), throughputs=self.config.simulate_throughputs,
                checkpoint_interval_s=self.config.simulate_checkpoint_interval_s,
                pace_path=self._write_pace(assignment),
            )
            environment = {**environment, **extra}
        process = JobProcess(
            job_id=assignment.job_id, command=command, environment=environment,
            gpu_indexes=list(assignment.gpu_indexes), log_dir=self.config.log_dir,
            checkpoint_dir=self.config.job_checkpoint_root / f"job-{assignment.job_id}",
            resume_step=assignment.resume_step, resume_checkpoint=assignment.resume_checkpoint,
            grace_s=int(self._grace(assignment)),  # whole seconds, rounded down: never more than it gets
        )
        if not command.strip():
            self._finish(assignment, process, "failed", exit_code=None, message="The job has no command.")
            return
        try:
            process.start()
        except OSError as exc:
            self._finish(assignment, process, "failed", exit_code=None, message=f"Could not start: {exc}")
            return
        log.info("job %s started on GPUs %s (pid %s, resuming at step %s)", assignment.job_id, assignment.gpu_indexes,
                 process.pid, assignment.resume_step)
        self._running[assignment.job_id] = (assignment, process)
        self._last_progress[assignment.job_id] = -math.inf  # reported on this turn: it started

    def _write_partner(self, assignment: Assignment) -> Path:
        """The simulated job's partner file, one workload name per line (simjob reads it every
        interval)."""
        path = partner_file(self.config.log_dir, assignment.job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_suffix(".partner.new")
        staged.write_text("".join(f"{partner}\n" for partner in assignment.partners))
        staged.replace(path)  # atomic: the job never reads a half-written list
        return path

    def _write_pace(self, assignment: Assignment) -> Path:
        """The simulated job's pace under its GPUs' power limits (simjob reads it every interval),
        written when it changes."""
        path = pace_file(self.config.log_dir, assignment.job_id)
        pace = self.backend.pace(assignment.gpu_indexes, assignment.power_limit_speed)
        if self._paces.get(assignment.job_id) != pace or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            staged = path.with_suffix(".pace.new")
            staged.write_text(f"{pace:.6f}\n")
            staged.replace(path)  # atomic: the job never reads half a number
            self._paces[assignment.job_id] = pace
        return path

    def _grace(self, assignment: Assignment) -> float:
        """The job's own grace period (--grace-period from a control plane before the contract)."""
        return assignment.preemption_grace_s if assignment.contract else self.config.grace_s

    def _short_grace(self, assignment: Assignment) -> float:
        """The grace period when the agent cannot wait for the job's own: SIGKILL must land by
        fence time, before the control plane places the job elsewhere."""
        return min(self._grace(assignment), self.config.grace_s)

    def _stop_job(self, job_id: int, grace_s: float | None = None, why: str = WITHDRAWN) -> None:
        """SIGTERM now, SIGKILL after `grace_s` (None: the job's own grace period); `why` goes
        into its final report, so the control plane records why it stopped."""
        assignment, process = self._running.pop(job_id)
        self._last_progress.pop(job_id, None)
        process.request_stop(self._grace(assignment) if grace_s is None else grace_s, why)
        self._stopping.append((assignment, process))

    def _stop_all(self, why: str) -> None:
        """Every job, the running and those already stopping, is gone within the short grace period."""
        for job_id, (assignment, _) in list(self._running.items()):
            self._stop_job(job_id, self._short_grace(assignment), why)
        for assignment, process in self._stopping:
            process.request_stop(self._short_grace(assignment), why)

    def _reap_stopped(self) -> None:
        """A stopped job that has exited: its final report says "preempted" (to a control plane
        that knows the contract; one from before knows it stopped)."""
        for entry in list(self._stopping):
            assignment, process = entry
            process.tick()
            code = process.exit_code()
            if code is None:
                continue
            self._stopping.remove(entry)
            if assignment.contract:
                log.info("job %s stopped (exit status %s) at step %s", assignment.job_id, code, process.steps)
                status = "succeeded" if _finished_while_stopping(process, code) else "preempted"
                self._final_reports[assignment.job_id] = self._report(
                    assignment, process, status, exit_code=code,
                    message=f"Stopped by the agent: {process.stop_reason or WITHDRAWN} (exit status {code}).",
                )

    def _supervise(self) -> None:
        """Jobs whose process ended: their final report waits to be delivered."""
        for job_id, (assignment, process) in list(self._running.items()):
            code = process.exit_code()
            if code is not None:
                del self._running[job_id]
                status, message = self._outcome(assignment, process, code)
                self._finish(assignment, process, status, exit_code=code, message=message)

    @staticmethod
    def _outcome(assignment: Assignment, process: JobProcess, code: int) -> tuple[str, str]:
        """(status, message) of a job that ended by itself."""
        if code == 0:
            return "succeeded", ""
        if code == PREEMPTED_EXIT_CODE and assignment.contract:
            return "preempted", f"Exited with status {code}: preempted, to be resumed from its checkpoint."
        return "failed", f"Exited with status {code}; see {process.stderr_log} on the node."

    def _finish(self, assignment: Assignment, process: JobProcess, status: str, *, exit_code, message: str) -> None:
        log.info("job %s %s (exit status %s)", assignment.job_id, status, exit_code)
        self._finished_keys.add(assignment.key)
        self._last_progress.pop(assignment.job_id, None)
        self._final_reports[assignment.job_id] = self._report(assignment, process, status, exit_code=exit_code,
                                                              message=message)

    def _report_jobs(self) -> None:
        """One request for every job of the node: the final reports (kept until the control
        plane settles them) and the progress of the running jobs due a report. Each report is
        answered on its own: a job no longer allocated here (409) does not refuse the others."""
        now = time.monotonic()
        with self._lock:
            finals = list(self._final_reports.values())
            due = [(assignment, process) for job_id, (assignment, process) in self._running.items()
                   if now - self._last_progress.get(job_id, -math.inf) >= self.config.progress_interval_s]
            for _, process in due:  # progress is sent afresh at its next interval, whatever becomes of this one
                self._last_progress[process.job_id] = now
            progress = [_with_traffic(self._report(*job, "running", exit_code=None, message=""), job[1]) for job in due]
        reports = finals + progress
        processes = [None] * len(finals) + [process for _, process in due]
        if not reports:
            return
        try:
            answers = self._send("progress", self.client.job_progress_batch, reports)
        except Refused as exc:  # the whole request (an older control plane, a revoked account)
            log.error("control plane refused the job reports of node %s: %s", self.node_id, exc)
            return
        if answers is None:
            return  # final reports wait for a later turn
        with self._lock:
            for report, answer, process in zip(reports, answers, processes):
                self._note_answer(report, answer if isinstance(answer, dict) else {}, process)

    def _note_answer(self, report: dict, answer: dict, process: JobProcess | None = None) -> None:
        job_id, code = report["job"], answer.get("status")
        if report["status"] == "running":
            if code == 200 and process is not None:
                process.delivered(len(report.get("measurements", ())))
            if code == 400 and "traffic" in report and _names_traffic(answer.get("errors")) and process is not None:
                # A job of no service, or a control plane from before services: reporting its
                # traffic again would refuse its progress again. Its progress goes at once, without.
                log.warning("job %s: traffic refused (%s); its reports go on without it", job_id, answer.get("errors"))
                process.traffic_refused = True
                if job_id in self._running:
                    self._last_progress[job_id] = -math.inf
                return
            if code == 409:
                log.info("job %s: progress refused (%s); the next poll will tell", job_id, answer.get("detail"))
            elif code != 200:
                log.warning("job %s: progress refused (HTTP %s: %s)", job_id, code, answer.get("detail") or answer)
            return
        if code not in SETTLED:
            return  # kept: sent again on the next turn
        if code != 200:
            log.warning("job %s: final report refused (HTTP %s: %s)", job_id, code, answer.get("detail") or answer)
        if self._final_reports.get(job_id) is report:
            del self._final_reports[job_id]

    def _report(self, assignment: Assignment, process: JobProcess, status: str, *, exit_code, message: str) -> dict:
        report = {
            "job": process.job_id, "status": status, "steps": process.steps, "total_steps": process.total,
            "steps_per_s": self._true_rate(process.steps_per_s()), "exit_code": exit_code, "message": message[:300],
        }
        if assignment.contract:  # a control plane from before it refuses unknown fields
            step, path = process.checkpoint or (None, "")
            report.update(checkpoint_step=step, checkpoint_path=path)
        if lines := process.measurements(MEASUREMENTS_PER_REPORT):  # only a profiling job prints them
            report["measurements"] = lines
        return report

    def _true_rate(self, steps_per_s: float | None) -> float | None:
        """What the job would do in real time: a simulated job runs --speedup times faster to
        shorten demos, but the catalog and P2 must learn the simulated GPU's real throughput."""
        if steps_per_s is None or self.config.simulate_seed is None:
            return steps_per_s
        return steps_per_s / self.config.simulate_speedup


def _with_traffic(report: dict, process: JobProcess) -> dict:
    """A running report carries the job's latest traffic line since its last report (a service
    replica's, docs/services.md), unless the control plane refused this run's traffic. Final
    reports never do: a refusal would settle, and so lose, the job's end."""
    traffic = process.take_traffic()
    if traffic is not None and not process.traffic_refused:
        report["traffic"] = {"request_rate_rps": traffic[0], "p99_ms": traffic[1]}
    return report


def _names_traffic(errors) -> bool:
    """Whether a report's 400 names its traffic ("traffic", or one of its fields "traffic.<name>")."""
    return isinstance(errors, dict) and any(key == "traffic" or str(key).startswith("traffic.") for key in errors)


def _unknown_gpu_fields(exc: Refused, names: tuple[str, ...]) -> bool:
    """Whether a 400 refused the registration for carrying any of `names` in its GPUs."""
    gpus = exc.body.get("gpus") if exc.status == 400 and isinstance(exc.body, dict) else None
    return isinstance(gpus, list) and any(isinstance(gpu, dict) and gpu.keys() & set(names) for gpu in gpus)


def _without(gpus: list[dict], names: tuple[str, ...]) -> bool:
    """Drop `names` from every GPU of a report; whether any was there."""
    found = False
    for gpu in gpus:
        for name in names:
            found = gpu.pop(name, None) is not None or found
    return found


def _health_paths(batch) -> list[tuple[str, str]]:
    """(where a strict control plane names a health signal it does not know, samples[i].field; the field)."""
    return [(f"samples[{i}].{key}", key) for i in range(len(batch)) for key in HEALTH_FIELDS]


def _unknown_field(exc: Refused, name: str) -> bool:
    """Whether a 400 refused the request for carrying the field `name` (StrictFieldsMixin's answer)."""
    return exc.status == 400 and isinstance(exc.body, dict) and name in exc.body


def _finished_while_stopping(process: JobProcess, code: int) -> bool:
    """A job asked to stop that exits 0 having reported its last step finished its work in its
    grace period: that is its end (the control plane keeps a late success), not a stop to resume.
    Exit 0 short of its total is a job that stopped cleanly without the contract's code."""
    return code == 0 and process.total is not None and process.steps >= process.total
