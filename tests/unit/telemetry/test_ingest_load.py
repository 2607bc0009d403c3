"""The load of bench_ingest (telemetry/ingest_load.py) against a stand-in control plane on
loopback: overload answers are waited out and counted apart from errors, and the report keeps
its keys."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from telemetry import ingest_load

REPORT_KEYS = {
    "nodes", "gpus_per_node", "gpus", "duration_s", "sample_interval_s", "upload_interval_s",
    "offered_samples_per_s", "samples_generated", "samples_accepted", "elapsed_s", "samples_per_s", "uploads",
    "upload_latency_s", "heartbeats", "heartbeat_latency_s", "errors", "errors_by_status", "overload_answers",
    "backlog_samples", "max_db_connections",
}


class ControlPlane(BaseHTTPRequestHandler):
    """Answers the first upload 503 (Retry-After 0), the second 500, then stores everything."""

    uploads = 0
    stored: list[dict] = []
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/heartbeat/"):
            return self._answer(200, {})
        with self.lock:
            ControlPlane.uploads += 1
            turn = ControlPlane.uploads
        if turn == 1:
            return self._answer(503, {"detail": "busy"}, {"Retry-After": "0"})
        if turn == 2:
            return self._answer(500, {})
        with self.lock:
            ControlPlane.stored += body["samples"]
        return self._answer(201, {"accepted": len(body["samples"])})

    def _answer(self, status, body, headers=()):
        payload = json.dumps(body).encode()
        self.send_response(status)
        for name, value in dict(headers).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def control_plane():
    ControlPlane.uploads, ControlPlane.stored = 0, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ControlPlane)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_overload_is_waited_out_errors_are_counted_and_nothing_is_lost(control_plane):
    plan = ingest_load.LoadPlan(nodes=1, gpus_per_node=2, duration_s=2, sample_interval_s=0.5,
                                upload_interval_s=1, heartbeat_interval_s=1)
    http = ingest_load.Http(control_plane, "token", timeout_s=10)
    tally = ingest_load.run(plan, http=http, nodes=[(1, ["GPU-a", "GPU-b"])])
    result = ingest_load.report(plan, tally, max_db_connections=None)
    assert set(result) == REPORT_KEYS
    assert result["overload_answers"] == {"503": 1} and result["errors_by_status"] == {"500": 1}
    assert result["errors"] == 1
    assert result["samples_accepted"] == result["samples_generated"] == len(ControlPlane.stored)
    assert result["backlog_samples"] == 0
    assert len({(s["gpu"], s["ts"]) for s in ControlPlane.stored}) == len(ControlPlane.stored)
    assert "429/503 answers" in ingest_load.format_table(result)


def test_percentiles_and_retry_after():
    assert ingest_load.percentile([], 99) is None
    assert ingest_load.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert ingest_load.percentile([1.0, 2.0], 99) == pytest.approx(1.99)
    assert ingest_load.retry_after_s("3") == 3.0
    for garbage in (None, "", "Wed, 21 Oct 2026 07:28:00 GMT", "-1", "nan"):
        assert ingest_load.retry_after_s(garbage) == ingest_load.DEFAULT_RETRY_AFTER_S
