"""False node-down under load, with real processes: the whole stack (daphne, a Celery worker and
beat running the silence detector), two simulated agents, one of them behind a TCP proxy in
this process that holds every connection 1.5 s before it forwards it, a 10 s heartbeat timeout
and a burst of submissions. Before agents heartbeated from their own thread, the proxied agent
sat in its sample flush (2 samples a request, 2 new ones a second: never done) and its node
went down; the control plane requeued its jobs while they still ran there.

What must hold: no node ever goes down, no job runs in two agent processes at once (the test
watches the simulated jobs' processes in /proc: each one's --partner-file lies in its agent's
log folder), no job holds open allocations on two nodes at once (allocation history), and
every job runs to its end exactly once (its last progress line, across both agents' logs)."""
import re
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from scheduler.models import Allocation, Job
from telemetry.models import Node

from .conftest import free_port, wait_for_http
from .test_http_api import call

pytestmark = pytest.mark.django_db(transaction=True)

DELAY_S = 1.5
TIMEOUT_S = 10  # GOGH_NODE_HEARTBEAT_TIMEOUT_S: the agents fence at 8 s, less their 1 s grace period
JOBS, STEPS, SPEEDUP = 8, 800, 20  # about 9 s a job at 4.4 steps/s x 20


class DelayingProxy:
    """Forwards TCP connections to `port`, each one after `delay_s` (a slow network or an
    overloaded front end), in daemon threads of this process."""

    def __init__(self, port: int, delay_s: float):
        self.target, self.delay_s = port, delay_s
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.server.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client):
        time.sleep(self.delay_s)
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target), timeout=30)
        except OSError:
            client.close()
            return
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)


def _pipe(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class JobWatch:
    """Which agent runs which job, from the simulated jobs' processes in /proc, every 0.1 s:
    `overlaps` lists (job, agents) seen running at once."""

    SIMJOB = re.compile(r"--partner-file\x00(?P<folder>[^\x00]+)/job-(?P<job>\d+)\.partner")

    def __init__(self, folders: dict[str, Path]):
        self.agents = {str(folder): name for name, folder in folders.items()}
        self.overlaps: list[tuple[int, set[str]]] = []
        self.seen: dict[int, set[str]] = {}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=5)

    def _watch(self):
        while not self._stop.is_set():
            running: dict[int, set[str]] = {}
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    match = self.SIMJOB.search(cmdline.read_text())
                except OSError:
                    continue  # ended meanwhile
                if match and match["folder"] in self.agents:
                    running.setdefault(int(match["job"]), set()).add(self.agents[match["folder"]])
            for job, agents in running.items():
                self.seen.setdefault(job, set()).update(agents)
                if len(agents) > 1:
                    self.overlaps.append((job, agents))
            self._stop.wait(0.1)


def agent_argv(url: str, hostname: str, log_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "telemetry.agent", "--simulate", "--gpus", "v100:2", "--url", url,
            "--hostname", hostname, "--heartbeat-interval", "1", "--poll-interval", "0.5", "--progress-interval", "1",
            "--upload-interval", "1", "--grace-period", "1", "--speedup", str(SPEEDUP), "--log-dir", str(log_dir),
            *extra]


def test_a_slow_link_to_one_agent_causes_no_node_down_and_no_double_run(spawn, agent, make_user, alice, v100,
                                                                        resnet50, tmp_path):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.4, source="reference",
                               observed_at=timezone.now())
    port = free_port()
    stack, stack_log = spawn("stack", [sys.executable, "manage.py", "run_stack", "--port", str(port),
                                       "--concurrency", "1"], GOGH_NODE_HEARTBEAT_TIMEOUT_S=str(TIMEOUT_S))
    base = f"http://127.0.0.1:{port}"
    wait_for_http(base + "/", stack, stack_log, timeout=120)
    proxy = DelayingProxy(port, DELAY_S)
    folders = {"near": tmp_path / "near", "far": tmp_path / "far"}
    far_agent = make_user("agent-far", agent=True)
    logs = [stack_log]
    for name, url, account, extra in (("near", base, agent, ()),
                                      ("far", f"http://127.0.0.1:{proxy.port}", far_agent, ("--batch-size", "2"))):
        logs.append(spawn(name, agent_argv(url, name, folders[name], *extra),
                          GOGH_AGENT_TOKEN=Token.objects.create(user=account).key)[1])
    watch = JobWatch(folders)
    went_down = set()

    def until(predicate, what, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            went_down.update(Node.objects.filter(state="down").values_list("hostname", flat=True))
            if went_down:
                pytest.fail(f"node {', '.join(sorted(went_down))} went down while waiting for {what}:\n" + tails())
            if predicate():
                return
            time.sleep(0.2)
        pytest.fail(f"{what} did not happen within {timeout} s:\n" + tails())

    def tails():
        return "\n".join(f"--- {log.name}\n{log.read_text()[-4000:]}" for log in logs)

    try:
        until(lambda: Node.objects.filter(hostname__in=folders).count() == 2, "both registrations", 60)
        Node.objects.update(approved_at=timezone.now())  # an operator admits both
        token = Token.objects.create(user=alice).key
        for _ in range(JOBS):  # the burst
            status, body = call(base, "/api/jobs/", token, {"workload": resnet50.name, "min_throughput": 2,
                                                           "max_gpus": 1, "total_steps": STEPS})
            assert status == 201, body
        until(lambda: Job.objects.filter(state="succeeded").count() == JOBS, "every job's success", 150)
        time.sleep(2 * TIMEOUT_S / 4)  # a detector run or two after the last job
        went_down.update(Node.objects.filter(state="down").values_list("hostname", flat=True))
    finally:
        watch.stop()
        proxy.close()

    assert went_down == set(), "a node went down"
    assert not Job.objects.filter(state_reason__contains="went down").exists()
    assert watch.overlaps == [], "a job ran in two agent processes at once"
    assert set(watch.seen) == set(Job.objects.values_list("pk", flat=True))
    assert any("far" in agents for agents in watch.seen.values()), "the proxied agent ran no job"
    for job in Job.objects.all():
        spans = [(a.start, a.end or timezone.now(), a.gpu.node.hostname) for a in Allocation.objects.filter(job=job)]
        for start, end, host in spans:
            assert not [other for s, e, other in spans if other != host and s < end and start < e]
        finished = sum(
            (folder / f"job-{job.pk}.out").read_text().count(f"GOGH_PROGRESS step={STEPS} total={STEPS}")
            for folder in folders.values() if (folder / f"job-{job.pk}.out").exists()
        )
        assert finished == 1, f"job {job.pk} ran to its end {finished} times"
