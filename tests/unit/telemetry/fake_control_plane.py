"""A stand-in control plane for agent tests: a real HTTP server on localhost speaking the
agent's endpoints, recording what it receives; it can be stopped and started on the same port
to simulate an outage. State lives in the object, so it survives a restart. It can also be
slow (`delays`), busy (`busy`: 429/503 with Retry-After) or deaf to heartbeats alone."""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODE_ID = 7


class FakeControlPlane:
    def __init__(self, token="agent-token"):
        self.token = token
        self.registrations, self.heartbeats, self.samples, self.progress = [], 0, [], []
        self.progress_batches: list[list[dict]] = []  # each batch request's reports
        self.progress_status: dict[int, int] = {}  # job -> status its reports get in a batch (default 200)
        self.refuses_traffic = False  # a report carrying traffic gets 400 naming it (a job of no service)
        self.delays: dict[str, float] = {}  # path -> seconds before it answers
        self.busy: dict[str, tuple[int, str]] = {}  # path -> (429 or 503, Retry-After header value)
        self.heartbeat_times: list[float] = []  # time.monotonic() of each heartbeat answered 200
        self.heartbeat_answer: dict = {"state": "ready"}
        self.heartbeat_status = 200  # e.g. 503: heartbeats fail while everything else works
        self.heartbeat_bodies: list = []  # each heartbeat's body, as received
        self.knows_power_limits = False  # the registration answer lists GPUs with their power limits
        self.before_power_limits = False  # refuses power-limit fields in a registration, as servers before them
        self.sample_attempts: list[float] = []  # time.monotonic() of each sample upload, answered or not
        self.assignments: list[dict] = []
        self.assignment_polls = 0
        self.gpu_failures: list[dict] = []
        self.dropped_reports: list[int | None] = []
        self.left = False
        self.leaving = False
        self.leave_order: list[str] = []  # "leaving", "leave" and each final report's status, as received
        self.leaving_status = 200  # e.g. 404: a control plane from before the leaving call
        self.node_deleted = False  # an operator deleted the node: its endpoints answer 404
        self.sample_fields_unknown: set[str] = set()  # e.g. a control plane from before the health signals
        self.lock = threading.Lock()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = None

    def start(self):
        self._server = _Server(("127.0.0.1", self.port), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str, body):
        """(status, body, headers) for a request, as the real control plane would answer."""
        time.sleep(self.delays.get(path, 0.0))
        with self.lock:
            if path == "/api/telemetry/samples/":
                self.sample_attempts.append(time.monotonic())
            if path in self.busy:
                status, retry_after = self.busy[path]
                return status, {"detail": "Busy."}, {"Retry-After": retry_after} if retry_after else {}
            return (*self._answer(method, path, body), {})

    def _answer(self, method: str, path: str, body):
        if method == "POST" and path == "/api/nodes/register/":
            self.registrations.append(body)
            if self.before_power_limits and any("power_limit_w" in gpu for gpu in body["gpus"]):
                return 400, {"gpus": [{"power_limit_w": ["Unknown field."]} for _ in body["gpus"]]}
            answer = {"id": NODE_ID, "hostname": body["hostname"]}
            if self.knows_power_limits:
                answer["gpus"] = [{"uuid": g["uuid"], "power_limit_w": g.get("power_limit_w")} for g in body["gpus"]]
            return 201, answer
        if self.node_deleted and path.startswith(f"/api/nodes/{NODE_ID}/"):
            return 404, {"detail": "No Node matches the given query."}
        if method == "POST" and path == f"/api/nodes/{NODE_ID}/heartbeat/":
            if self.heartbeat_status != 200:
                return self.heartbeat_status, {"detail": "Heartbeats fail."}
            self.heartbeats += 1
            self.heartbeat_times.append(time.monotonic())
            self.heartbeat_bodies.append(body)
            return 200, dict(self.heartbeat_answer)
        if method == "POST" and path == f"/api/nodes/{NODE_ID}/gpu-failures/":
            self.gpu_failures.extend(body["gpus"])
            return 200, []
        if method == "GET" and path == f"/api/nodes/{NODE_ID}/assignments/":
            self.assignment_polls += 1
            return 200, self.assignments
        if method == "POST" and path == "/api/telemetry/samples/":
            unknown = {f"samples[{i}].{key}": ["Unexpected field."] for i, sample in enumerate(body["samples"])
                       for key in sample if key in self.sample_fields_unknown}
            if unknown:
                return 400, unknown
            self.samples.extend(body["samples"])
            self.dropped_reports.append(body["dropped"])
            return 201, {"accepted": len(body["samples"])}
        if method == "POST" and path == "/api/telemetry/job-progress/":
            self.progress.append(body)
            if body.get("status") not in (None, "running"):
                self.leave_order.append(body["status"])
            return 200, {"job": body["job"]}
        if method == "POST" and path == "/api/telemetry/job-progress/batch/":
            self.progress_batches.append(body["reports"])
            answers = []
            for report in body["reports"]:
                if self.refuses_traffic and "traffic" in report:
                    answers.append({"job": report["job"], "status": 400,
                                    "errors": {"traffic": ["Not a replica of a service."]}})
                    continue
                status = self.progress_status.get(report["job"], 200)
                if status == 200:
                    self.progress.append(report)
                    if report.get("status") not in (None, "running"):
                        self.leave_order.append(report["status"])
                answers.append({"job": report["job"], "status": status})
            return 200, {"results": answers}
        if method == "POST" and path == f"/api/nodes/{NODE_ID}/leaving/":
            self.leave_order.append("leaving")
            if self.leaving_status != 200:
                return self.leaving_status, {"detail": "Not found."}
            self.leaving = True
            return 200, {"state": "draining"}
        if method == "POST" and path == f"/api/nodes/{NODE_ID}/leave/":
            self.leave_order.append("leave")
            self.left = True
            return 200, {"state": "down"}
        return 404, {"detail": "Not found."}


class _Server(ThreadingHTTPServer):
    """A client that gave up on a delayed answer (its timeout is what some tests check) hangs up
    before the reply is written: that is no error of the fake's, so it prints no traceback."""
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(plane: FakeControlPlane):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _serve(self, method):
            if self.headers.get("Authorization") != f"Token {plane.token}":
                return self._reply(401, {"detail": "Invalid token."})
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            self._reply(*plane.answer(method, self.path, body))

        def _reply(self, status, body, headers=None):
            raw = json.dumps(body).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

    return Handler
