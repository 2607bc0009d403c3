"""The agent's HTTP client for the control plane: stdlib urllib, token auth, JSON.

Two kinds of failure, because the agent treats them differently: `Unreachable` (no answer,
a timeout, a 5xx: try again later, keep buffering) and `Refused` (a 4xx: the control plane
heard and said no; resending the same request will not help).
"""
import json
import urllib.error
import urllib.request


class Unreachable(OSError):
    """The control plane did not answer usefully; the request may be retried."""


class Refused(Exception):
    """The control plane answered 4xx; `status` and the decoded `body` say why."""

    def __init__(self, status: int, body):
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}: {body}")


class ControlPlane:
    def __init__(self, url: str, token: str, timeout: float = 10.0):
        self.url, self._token, self._timeout = url.rstrip("/"), token, timeout

    def register(self, report: dict) -> dict:
        return self._call("POST", "/api/nodes/register/", report)

    def heartbeat(self, node_id: int) -> dict:
        return self._call("POST", f"/api/nodes/{node_id}/heartbeat/", {})

    def leave(self, node_id: int) -> dict:
        return self._call("POST", f"/api/nodes/{node_id}/leave/", {})

    def report_gpu_failures(self, node_id: int, failures: list[dict]) -> dict:
        return self._call("POST", f"/api/nodes/{node_id}/gpu-failures/", {"gpus": failures})

    def assignments(self, node_id: int) -> list[dict]:
        return self._call("GET", f"/api/nodes/{node_id}/assignments/")

    def upload_samples(self, samples: list[dict], dropped: int) -> dict:
        return self._call("POST", "/api/telemetry/samples/", {"samples": samples, "dropped": dropped})

    def job_progress(self, report: dict) -> dict:
        return self._call("POST", "/api/telemetry/job-progress/", report)

    def gpu_types(self) -> list[dict]:
        return self._call("GET", "/api/gpu-types/?page_size=500")["results"]

    def _call(self, method: str, path: str, body=None):
        request = urllib.request.Request(self.url + path, method=method)
        request.add_header("Authorization", f"Token {self._token}")
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", "application/json")
            request.data = json.dumps(body).encode()
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            if error.code >= 500:
                raise Unreachable(f"{method} {path}: HTTP {error.code}") from error
            try:
                detail = json.loads(raw)
            except ValueError:
                detail = raw.decode(errors="replace")[:500]
            raise Refused(error.code, detail) from error
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            raise Unreachable(f"{method} {path}: {getattr(error, 'reason', error)}") from error
