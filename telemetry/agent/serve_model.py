"""A real inference service under the job contract (docs/jobs.md, "Services"): a small PyTorch
model answering requests over HTTP, as a replica of a GOGH service runs.

    python -m telemetry.agent.serve_model --batch-size 8          # port from GOGH_SERVICE_PORT

    POST /predict   {"inputs": [<--features numbers>]} or {} (a random input)
                    -> 200 {"outputs": [...], "batch": <requests in its batch>, "latency_ms": ...}
    GET  /health    -> 200 {"ready": true, "batch_size": ..., "features": ..., "device": ...}

Requests queue; one worker thread takes up to --batch-size of them at once and runs the model
on them together. One batch is one step (GOGH_PROGRESS), which is how the control plane counts a
service's work (a service's speed is its workload's steps per second, one step one batch). Every
--report-interval-s it reports its traffic (GOGH_TRAFFIC, telemetry.agent.contract): the
requests per second it answered over the last --window-s and their P99 latency, each measured
from the request's arrival to its answer being ready, so queueing behind other batches counts.
That is what the control plane calibrates its latency model with (docs/services.md).

The port is --port, by default the environment's GOGH_SERVICE_PORT (0 or unset: any free port;
the line "serving on http://HOST:PORT" says which). SIGTERM (a stop, a move): it stops taking
requests, answers those queued and exits 75, the contract's "stopped, run me again".
torch is imported by this script only: the rest of the agent package never needs it.
"""
import argparse
import json
import math
import os
import queue
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from telemetry.agent import contract
from telemetry.agent.load_generator import percentile, positive_number

PORT_VARIABLE = "GOGH_SERVICE_PORT"
#: Requests waiting beyond this are answered 503 at once: an overloaded replica says so rather
#: than letting every latency grow without bound.
QUEUE_LIMIT = 10000
MAX_BODY = 1 << 20


@dataclass
class Pending:
    """One request on its way: its input, when it arrived, and its answer once its batch ran."""

    inputs: list | None
    arrived: float
    done: threading.Event = field(default_factory=threading.Event)
    outputs: list | None = None
    batch: int = 0
    error: str = ""


class TrafficWindow:
    """The requests answered over the last `window_s` seconds: their rate and P99 latency."""

    def __init__(self, window_s: float, clock=time.monotonic):
        self.window_s, self._clock = window_s, clock
        self._started = clock()
        self._answered: deque[tuple[float, float]] = deque()  # (answered at, latency ms)
        self._lock = threading.Lock()

    def note(self, latency_ms: float) -> None:
        with self._lock:
            self._answered.append((self._clock(), latency_ms))

    def traffic(self) -> tuple[float, float | None]:
        """(requests/s, P99 ms or None when none was answered) over the window, or over the
        time since the start while that is shorter (a rate over the whole window would
        understate the first seconds' traffic)."""
        now = self._clock()
        with self._lock:
            while self._answered and self._answered[0][0] < now - self.window_s:
                self._answered.popleft()
            latencies = sorted(latency for _, latency in self._answered)
        span = min(self.window_s, now - self._started)
        rate = len(latencies) / span if span > 0 else 0.0
        return rate, percentile(latencies, 99) if latencies else None


class Model:
    """A small MLP in inference mode: a few milliseconds a batch on a CPU."""

    def __init__(self, *, features: int, hidden: int, layers: int, device: str):
        import torch
        from torch import nn

        self.torch, self.features, self.device = torch, features, device
        torch.manual_seed(0)
        widths = [features] + [hidden] * layers
        stack = []
        for width_in, width_out in zip(widths, widths[1:]):
            stack += [nn.Linear(width_in, width_out), nn.ReLU()]
        self.net = nn.Sequential(*stack, nn.Linear(widths[-1], 10)).to(device).eval()

    def run(self, batch: list[list | None]) -> list[list[float]]:
        torch = self.torch
        rows = [torch.tensor(inputs, dtype=torch.float32) if inputs is not None else torch.randn(self.features)
                for inputs in batch]
        with torch.inference_mode():
            return self.net(torch.stack(rows).to(self.device)).cpu().tolist()


class Batcher:
    """The worker: takes up to batch_size queued requests at once, runs them as one step,
    answers each, reports the step."""

    def __init__(self, model: Model, *, batch_size: int, window: TrafficWindow, job: contract.Job):
        self.model, self.batch_size, self.window, self.job = model, batch_size, window, job
        self.requests: queue.Queue[Pending] = queue.Queue(maxsize=QUEUE_LIMIT)
        self.step = job.resume_step
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="batcher", daemon=True)

    def stop(self) -> None:
        """Answer what is queued, then end."""
        self._stop.set()
        self.thread.join()

    def _loop(self) -> None:
        while True:
            try:
                first = self.requests.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < self.batch_size:
                try:
                    batch.append(self.requests.get_nowait())
                except queue.Empty:
                    break
            try:
                outputs = self.model.run([pending.inputs for pending in batch])
            except Exception as exc:  # one failed batch (out of memory) fails its requests, not the service
                print(f"serve_model: a batch of {len(batch)} failed: {exc!r}", file=sys.stderr, flush=True)
                for pending in batch:
                    pending.error = f"The model failed on this batch: {exc!r}"[:300]
                    pending.done.set()
                continue
            answered = time.monotonic()
            for pending, output in zip(batch, outputs):
                pending.outputs, pending.batch = output, len(batch)
                self.window.note((answered - pending.arrived) * 1000)
                pending.done.set()
            self.step += 1
            self.job.progress(self.step)


def handler_for(batcher: Batcher, model: Model):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass  # one line per request would drown the job's log

        def do_GET(self):
            if self.path != "/health":
                return self._reply(404, {"error": "GET /health or POST /predict."})
            self._reply(200, {"ready": True, "batch_size": batcher.batch_size, "features": model.features,
                              "device": model.device})

        def do_POST(self):
            arrived = time.monotonic()
            if self.path != "/predict":
                return self._reply(404, {"error": "GET /health or POST /predict."})
            inputs, problem = self._inputs()
            if problem:
                return self._reply(400, {"error": problem})
            pending = Pending(inputs=inputs, arrived=arrived)
            try:
                batcher.requests.put_nowait(pending)
            except queue.Full:
                return self._reply(503, {"error": f"{QUEUE_LIMIT} requests are waiting already."})
            pending.done.wait()
            if pending.error:
                return self._reply(500, {"error": pending.error})
            self._reply(200, {"outputs": pending.outputs, "batch": pending.batch,
                              "latency_ms": (time.monotonic() - arrived) * 1000})

        def _inputs(self) -> tuple[list | None, str]:
            """(the request's input or None for a random one, "" or why it is refused)."""
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                return None, "Content-Length is not a number."
            if not 0 <= length <= MAX_BODY:
                return None, f"A body of at most {MAX_BODY} bytes."
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                return None, "The body is not JSON."
            inputs = body.get("inputs") if isinstance(body, dict) else None
            if inputs is None:
                return None, "" if isinstance(body, dict) else "The body is a JSON object."
            if not (isinstance(inputs, list) and len(inputs) == model.features and all(
                    isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in inputs)):
                return None, f"inputs: a list of {model.features} finite numbers."
            return inputs, ""

        def _reply(self, status: int, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535; 0: any free port)")
    return port


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="serve_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: loopback only).")
    parser.add_argument("--port", type=_port, default=None,
                        help=f"Port to listen on (default: ${PORT_VARIABLE}, else 0: any free port).")
    parser.add_argument("--batch-size", type=positive_number(int), default=8, help="Requests per batch (step) at most.")
    parser.add_argument("--features", type=positive_number(int), default=64, help="Numbers in one request's input.")
    parser.add_argument("--hidden", type=positive_number(int), default=512, help="Width of the model's hidden layers.")
    parser.add_argument("--layers", type=positive_number(int), default=3, help="Hidden layers of the model.")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="Where the model runs (auto: the GPU when there is one).")
    parser.add_argument("--report-interval-s", type=positive_number(float), default=2.0,
                        help="Seconds between two traffic reports (GOGH_TRAFFIC lines).")
    parser.add_argument("--window-s", type=positive_number(float), default=10.0,
                        help="Seconds of answered requests each traffic report measures.")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    port = args.port
    if port is None:
        try:
            port = _port(os.environ.get(PORT_VARIABLE) or "0")
        except argparse.ArgumentTypeError as exc:
            parser().error(f"{PORT_VARIABLE}: {exc}")
    job = contract.Job.from_environment()  # SIGTERM from now on only sets job.preemption_requested
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("serve_model: --device cuda, but torch sees no GPU", file=sys.stderr)
        return 1
    model = Model(features=args.features, hidden=args.hidden, layers=args.layers, device=device)
    window = TrafficWindow(args.window_s)
    batcher = Batcher(model, batch_size=args.batch_size, window=window, job=job)
    try:
        server = ThreadingHTTPServer((args.host, port), handler_for(batcher, model))
    except OSError as exc:
        print(f"serve_model: cannot listen on {args.host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    server.daemon_threads = True
    batcher.thread.start()
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    host, bound = server.server_address[:2]
    print(f"serving on http://{host}:{bound} ({device}, batch size {args.batch_size})", flush=True)
    next_report = time.monotonic() + args.report_interval_s
    while not job.preemption_requested:
        time.sleep(max(0.0, min(0.2, next_report - time.monotonic())))
        if time.monotonic() >= next_report:
            job.traffic(*window.traffic())
            next_report += args.report_interval_s
    server.shutdown()
    batcher.stop()
    print(f"stopped after step {batcher.step}", flush=True)
    job.exit_preempted()
    return contract.PREEMPTED_EXIT_CODE


if __name__ == "__main__":
    sys.exit(main())
