"""What the issue-16 integration tests share ("jobs keep their work"): a cluster of real
processes on loopback (daphne, a Celery worker for the rounds, Celery beat, simulated node
agents), the jobs API observed as a user polling it sees it, and a job's own output split into
its runs (where each run resumed, the checkpoints it made).

Everything is read where a person would read it: the API for what users see, the jobs' output
files for what the jobs did, the database only for the interruptions the control plane
recorded."""
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.utils import timezone

from scheduler.models import Job, SolveRun
from telemetry.models import Node

from .conftest import free_port, wait_for_http, worker_argv
from .test_http_api import call

PROGRESS = re.compile(r"^GOGH_PROGRESS step=(\d+)")
CHECKPOINT = re.compile(r"^GOGH_CHECKPOINT step=(\d+) path=(.+)$")


@dataclass(frozen=True)
class NodeSpec:
    hostname: str
    gpus: str  # "<type>:<count>", the agent's --gpus
    agent_args: tuple[str, ...] = ()  # more agent options (its simulated jobs' checkpoint interval)


@dataclass
class Cluster:
    base: str
    spawn: object
    agent_token: str
    speedup: float
    logs: list[Path] = field(default_factory=list)
    job_logs: dict[str, Path] = field(default_factory=dict)  # hostname -> the agent's --log-dir
    agents: dict[str, object] = field(default_factory=dict)  # hostname -> Popen

    def start_agent(self, node: NodeSpec, seed: int = 0) -> None:
        """A simulated agent for `node` that polls, reports and beats every second or two."""
        folder = self.spawn.folder / "jobs" / node.hostname
        argv = [sys.executable, "-m", "telemetry.agent", "--simulate", "--gpus", node.gpus, "--url", self.base,
                "--hostname", node.hostname, "--seed", str(seed), "--poll-interval", "0.5",
                "--progress-interval", "1", "--upload-interval", "2", "--heartbeat-interval", "2",
                "--speedup", str(self.speedup), "--log-dir", str(folder), *node.agent_args]
        proc, log = self.spawn(f"agent-{node.hostname}", argv, GOGH_AGENT_TOKEN=self.agent_token)
        self.agents[node.hostname], self.job_logs[node.hostname] = proc, folder
        self.logs.append(log)

    def wait_ready(self, hostnames, timeout: float = 90) -> None:
        """Until every node is registered, approved (the control plane auto-approves them) and ready."""
        wait_for(lambda: Node.objects.filter(hostname__in=hostnames, state="ready", approved_at__isnull=False)
                 .count() == len(hostnames), f"nodes {', '.join(hostnames)} ready", self.logs, timeout)


def start_control_plane(spawn, *, hostnames, agent_token: str, speedup: float, beat: bool = True) -> Cluster:
    """daphne (auto-approving `hostnames`), one Celery worker for every queue (rounds included)
    and, with `beat`, Celery beat sending a periodic round every 5 s (the shortest interval the
    settings allow), all on the embedded broker in the test's var/ folder."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne, daphne_log = spawn(
        "daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "gogh_web.asgi:application"],
        GOGH_AUTO_APPROVE_NODES=",".join(hostnames),
    )
    _, worker_log = spawn("worker", worker_argv("rounds"))
    cluster = Cluster(base=base, spawn=spawn, agent_token=agent_token, speedup=speedup, logs=[daphne_log, worker_log])
    if beat:
        _, beat_log = spawn("beat", [sys.executable, "-m", "celery", "-A", "gogh_web", "beat", "-l", "INFO"],
                            GOGH_SCHEDULING_INTERVAL_S="5")
        cluster.logs.append(beat_log)
    wait_for_http(base + "/api/", daphne, daphne_log)
    return cluster


def tails(logs, lines: int = 40) -> str:
    return "\n".join(f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) for p in logs)


def wait_for(predicate, what: str, logs, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"{what} did not happen within {timeout} s:\n{jobs_now()}\n{tails(logs)}")


def jobs_now() -> str:
    """Every job's state, progress and pending reason as the database holds them, and the last
    round's outcome: what a timeout's logs (daphne's requests, the worker's task lines) do not
    say."""
    rows = Job.objects.order_by("pk").values_list("pk", "priority", "state", "current_step", "pending_reason")
    lines = [f"job {pk} priority {priority} {state} at step {step}: {reason or '-'}"
             for pk, priority, state, step, reason in rows]
    run = SolveRun.objects.order_by("-pk").first()
    if run is not None:
        lines.append(f"last round {run.pk}: {run.status}, {run.num_jobs} jobs, {run.num_placed} placed, "
                     f"{run.fallback_reason or 'no fallback'}; {run.notes or 'no notes'}")
    return "--- jobs now\n" + "\n".join(lines)


class JobsWatch:
    """Every job of every GET /api/jobs/ response, in order, each with the time the answer was
    back (after the server read it: an item seen at t was true at t)."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token
        self.seen: dict[int, list[tuple[object, dict]]] = defaultdict(list)

    def poll(self) -> list[dict]:
        status, body = call(self.base, "/api/jobs/?page_size=200", self.token)
        assert status == 200, body
        at = timezone.now()
        items = json.loads(body)["results"]
        for item in items:
            self.seen[item["id"]].append((at, item))
        return items

    def values(self, job_id: int, name: str) -> list:
        return [item[name] for _, item in self.seen[job_id]]

    def checkpoint_known_before(self, job_id: int, moment) -> int:
        """The latest checkpoint step the API showed for the job before `moment` (0: none)."""
        return max((item["checkpoint_step"] or 0 for at, item in self.seen[job_id] if at < moment), default=0)


@dataclass
class Run:
    """One process of a job on one node, as its output shows it."""

    node: str
    steps: list[int] = field(default_factory=list)  # its GOGH_PROGRESS steps, in order
    checkpoints: list[int] = field(default_factory=list)  # its GOGH_CHECKPOINT steps, in order
    paths: dict[int, str] = field(default_factory=dict)  # checkpoint step -> where it is
    lines: list[str] = field(default_factory=list)

    @property
    def start(self) -> int:
        """Where it resumed: its first progress line (a run under the contract reports its
        resume step before its first step)."""
        return self.steps[0]


def job_runs(job_logs: dict[str, Path], job_id: int, starts_run) -> list[Run]:
    """The runs of a job in its output files (job-<id>.out of every node), a new one at each
    line for which `starts_run(line)` is true, sorted by where they resumed."""
    runs = []
    for node, folder in job_logs.items():
        path = folder / f"job-{job_id}.out"
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            if starts_run(line) or not runs or runs[-1].node != node:
                runs.append(Run(node=node))
            run = runs[-1]
            run.lines.append(line)
            if match := PROGRESS.match(line):
                run.steps.append(int(match[1]))
            elif match := CHECKPOINT.match(line):
                run.checkpoints.append(int(match[1]))
                run.paths[int(match[1])] = match[2]
    return sorted((run for run in runs if run.steps), key=lambda run: run.start)


def agent_starts(logs, job_id: int) -> int:
    """How many times the agents started a process for the job (their "job N started" lines)."""
    pattern = re.compile(rf"job {job_id} started on GPUs")
    return sum(len(pattern.findall(path.read_text(errors="replace"))) for path in logs if path.name.startswith("agent"))
