"""The load of `manage.py bench_ingest`: simulated node agents uploading GPU samples, and the
report of what the control plane made of them. Pure Python (stdlib only), like the agent.

Each simulated node does what an agent does (telemetry/agent/agent.py): it samples its GPUs
every `sample_interval_s` into a buffer, whatever the control plane is doing; every
`upload_interval_s` it uploads the buffer, oldest first, in batches of at most `batch_size`,
until it is empty or a request fails; it heartbeats every `heartbeat_interval_s`, in the same
serial loop. An answer 429 or 503 is the control plane's overload answer, not an error: the
node keeps buffering and tries again after the Retry-After it was given. Any other failure (a
5xx, a timeout, a refused connection) is an error, counted by status, and the node tries again
at its next upload. Nodes start spread over one upload interval, as independent agents do.
At the end each node stops sampling and uploads what it holds, as an agent that stops does
(waiting out overload answers, for at most two upload intervals); what it still holds then is
the backlog left.
"""
import http.client
import json
import math
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

#: The overload answers: the node waits Retry-After and keeps its samples.
OVERLOAD = (429, 503)
#: A Retry-After the load honours when an overload answer lacks one (or gives garbage).
DEFAULT_RETRY_AFTER_S = 1.0


@dataclass(frozen=True)
class LoadPlan:
    nodes: int
    gpus_per_node: int
    duration_s: float
    sample_interval_s: float = 1.0
    upload_interval_s: float = 5.0
    heartbeat_interval_s: float = 15.0
    batch_size: int = 500
    timeout_s: float = 10.0
    seed: int = 7

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def offered_samples_per_s(self) -> float:
        return self.gpus / self.sample_interval_s


@dataclass
class Tally:
    """What all nodes saw, added up under one lock."""

    upload_latencies: list[float] = field(default_factory=list)
    heartbeat_latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    overload: dict[str, int] = field(default_factory=dict)
    generated: int = 0
    accepted: int = 0
    backlog: int = 0
    start: float = 0.0
    elapsed_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, table: dict, key) -> None:
        with self.lock:
            table[str(key)] = table.get(str(key), 0) + 1


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def retry_after_s(header: str | None) -> float:
    """Seconds to wait from a Retry-After header (delta-seconds form; an HTTP date or garbage
    counts as the default)."""
    try:
        value = float(header)
    except (TypeError, ValueError):
        return DEFAULT_RETRY_AFTER_S
    return value if math.isfinite(value) and value >= 0 else DEFAULT_RETRY_AFTER_S


def gpu_uuid(prefix: str, node: int, index: int) -> str:
    return f"GPU-{prefix}-{node:04d}-{index}"


def node_registration(prefix: str, node: int, gpus_per_node: int, gpu_type: str) -> dict:
    """What a simulated node's agent registers (POST /api/nodes/register/)."""
    return {
        "hostname": f"{prefix}-{node:04d}",
        "agent_version": "bench",
        "gpus": [
            {"index": i, "uuid": gpu_uuid(prefix, node, i), "product_name": f"GOGH simulated {gpu_type.upper()}",
             "gpu_type": gpu_type}
            for i in range(gpus_per_node)
        ],
    }


def sample_payload(uuid: str, ts: float, rng: random.Random) -> dict:
    """One reading as the agent sends it (telemetry.agent.gpus.GpuSample.payload)."""
    utilization = rng.uniform(0.0, 1.0)
    return {
        "gpu": uuid, "ts": datetime.fromtimestamp(ts, tz=UTC).isoformat(),
        "power_w": round(60 + 240 * utilization, 1), "utilization": round(utilization, 3),
        "memory_used_mb": 9120.0, "sm_clock_mhz": 1380.0, "temperature_c": round(40 + 40 * utilization, 1),
        "ecc_corrected": 0, "ecc_uncorrected": 0, "retired_pages": 0,
    }


class Http:
    """One request per connection, like the agent's urllib client: (status, headers, body, seconds)."""

    def __init__(self, url: str, token: str, timeout_s: float):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json",
                        "Accept": "application/json"}
        self.timeout_s = timeout_s

    def post(self, path: str, body: dict) -> tuple[int | str, dict, bytes, float]:
        """Status "timeout" or "connection" when no HTTP answer came."""
        started = time.monotonic()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            connection.request("POST", path, json.dumps(body), self.headers)
            response = connection.getresponse()
            payload = response.read()
            return response.status, dict(response.getheaders()), payload, time.monotonic() - started
        except TimeoutError:
            return "timeout", {}, b"", time.monotonic() - started
        except OSError:
            return "connection", {}, b"", time.monotonic() - started
        finally:
            connection.close()


class SimulatedNode:
    """One node's agent loop (see the module's docstring), for the plan's duration."""

    def __init__(self, *, http: Http, node_id: int, uuids: list[str], plan: LoadPlan, tally: Tally,
                 start: float, offset_s: float, rng: random.Random):
        self.http, self.node_id, self.uuids, self.plan, self.tally = http, node_id, uuids, plan, tally
        self.start, self.rng = start, rng
        self.buffer: list[dict] = []
        self.sampled_until = start  # the next sampling instant
        self.next_upload = start + offset_s
        self.next_heartbeat = start + offset_s
        self.end = start + plan.duration_s

    def run(self) -> None:
        while True:
            now = time.monotonic()
            self._sample(min(now, self.end))
            if now >= self.end:
                break
            if now >= self.next_heartbeat:
                self.next_heartbeat = now + self.plan.heartbeat_interval_s
                self._heartbeat()
            if time.monotonic() >= self.next_upload:
                self.next_upload = time.monotonic() + self.plan.upload_interval_s
                self._flush()
            time.sleep(max(0.0, min(self.next_upload, self.next_heartbeat, self.end) - time.monotonic()))
        self._drain(until=self.end + 2 * self.plan.upload_interval_s)
        with self.tally.lock:
            self.tally.backlog += len(self.buffer)

    def _sample(self, now: float) -> None:
        """Every sampling instant up to `now`, stamped with its wall-clock time, as the agent's
        sampler thread makes them while the loop waits on a slow request."""
        made = 0
        while self.sampled_until <= now:
            wall = time.time() - (time.monotonic() - self.sampled_until)
            self.buffer += [sample_payload(uuid, wall, self.rng) for uuid in self.uuids]
            made += len(self.uuids)
            self.sampled_until += self.plan.sample_interval_s
        if made:
            with self.tally.lock:
                self.tally.generated += made

    def _heartbeat(self) -> None:
        status, headers, _, seconds = self.http.post(f"/api/nodes/{self.node_id}/heartbeat/", {})
        with self.tally.lock:
            self.tally.heartbeat_latencies.append(seconds)
        if status in OVERLOAD:
            self.tally.count(self.tally.overload, status)
        elif status != 200:
            self.tally.count(self.tally.errors, status)

    def _drain(self, until: float) -> None:
        """The agent's last uploads when it stops: after an overload answer it waits the
        Retry-After and goes on, until the buffer is empty, an error, or `until`."""
        while self.buffer and time.monotonic() < until:
            self.next_upload = time.monotonic()
            self._flush(until=until)
            wait = self.next_upload - time.monotonic()
            if wait <= 0:  # emptied, or an error: an agent would try at its next interval
                return
            time.sleep(min(wait, max(0.0, until - time.monotonic())))

    def _flush(self, until: float | None = None) -> None:
        """Upload until the buffer is empty, a request fails, or `until` (default: the end of the load)."""
        while self.buffer and time.monotonic() < (until or self.end):
            batch = self.buffer[: self.plan.batch_size]
            status, headers, body, seconds = self.http.post(
                "/api/telemetry/samples/", {"samples": batch, "dropped": 0}
            )
            with self.tally.lock:
                self.tally.upload_latencies.append(seconds)
            if status == 201:
                del self.buffer[: len(batch)]
                with self.tally.lock:
                    self.tally.accepted += json.loads(body)["accepted"]
                continue
            if status in OVERLOAD:
                self.tally.count(self.tally.overload, status)
                self.next_upload = time.monotonic() + retry_after_s(headers.get("Retry-After"))
            else:
                self.tally.count(self.tally.errors, status)
            return


def run(plan: LoadPlan, *, http: Http, nodes: list[tuple[int, list[str]]]) -> Tally:
    """Run the plan with one thread per registered node ((node id, GPU UUIDs)); the tally."""
    tally = Tally()
    rng = random.Random(plan.seed)
    start = time.monotonic() + 0.5
    tally.start = start
    threads = [
        threading.Thread(
            target=SimulatedNode(http=http, node_id=node_id, uuids=uuids, plan=plan, tally=tally, start=start,
                                 offset_s=rng.uniform(0, plan.upload_interval_s), rng=random.Random(rng.random())).run,
            name=f"node-{node_id}", daemon=True,
        )
        for node_id, uuids in nodes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tally.elapsed_s = time.monotonic() - start
    return tally


def report(plan: LoadPlan, tally: Tally, *, max_db_connections: int | None) -> dict:
    """The stable report keys (docs/telemetry.md)."""
    latencies = tally.upload_latencies
    return {
        "nodes": plan.nodes,
        "gpus_per_node": plan.gpus_per_node,
        "gpus": plan.gpus,
        "duration_s": plan.duration_s,
        "sample_interval_s": plan.sample_interval_s,
        "upload_interval_s": plan.upload_interval_s,
        "offered_samples_per_s": plan.offered_samples_per_s,
        "samples_generated": tally.generated,
        "samples_accepted": tally.accepted,
        "elapsed_s": tally.elapsed_s,
        "samples_per_s": tally.accepted / tally.elapsed_s if tally.elapsed_s else 0.0,
        "uploads": len(latencies),
        "upload_latency_s": {
            "p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
            "p99": percentile(latencies, 99), "max": max(latencies, default=None),
        },
        "heartbeats": len(tally.heartbeat_latencies),
        "heartbeat_latency_s": {"p99": percentile(tally.heartbeat_latencies, 99),
                                "max": max(tally.heartbeat_latencies, default=None)},
        "errors": sum(tally.errors.values()),
        "errors_by_status": dict(sorted(tally.errors.items())),
        "overload_answers": dict(sorted(tally.overload.items())),
        "backlog_samples": tally.backlog,
        "max_db_connections": max_db_connections,
    }


def format_table(result: dict) -> str:
    def seconds(value):
        return "-" if value is None else f"{value:.3f} s"

    latency = result["upload_latency_s"]
    rows = [
        ("load", f"{result['nodes']} nodes x {result['gpus_per_node']} GPUs, a sample every "
                 f"{result['sample_interval_s']:g} s, uploads every {result['upload_interval_s']:g} s, "
                 f"{result['duration_s']:g} s"),
        ("samples/s offered", f"{result['offered_samples_per_s']:.0f}"),
        ("samples/s achieved", f"{result['samples_per_s']:.0f} ({result['samples_accepted']} of "
                               f"{result['samples_generated']} stored in {result['elapsed_s']:.1f} s)"),
        ("uploads", str(result["uploads"])),
        ("upload latency p50 / p95 / p99 / max",
         " / ".join(seconds(latency[q]) for q in ("p50", "p95", "p99", "max"))),
        ("heartbeats (p99, max)", f"{result['heartbeats']} ({seconds(result['heartbeat_latency_s']['p99'])}, "
                                  f"{seconds(result['heartbeat_latency_s']['max'])})"),
        ("errors", f"{result['errors']} {result['errors_by_status'] or ''}".strip()),
        ("429/503 answers (Retry-After)", str(result["overload_answers"] or 0)),
        ("backlog left (samples)", str(result["backlog_samples"])),
        ("max database connections",
         "-" if result["max_db_connections"] is None else str(result["max_db_connections"])),
    ]
    if result.get("web_cpu_s") is not None:
        per_thousand = 1000 * result["web_cpu_s"] / result["samples_accepted"] if result["samples_accepted"] else None
        rows.append(("web process CPU", f"{result['web_cpu_s']:.1f} s"
                     + (f" ({per_thousand:.2f} s per 1,000 samples stored)" if per_thousand else "")))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
