"""The agent's HTTP client for the control plane: stdlib urllib, token auth, JSON.

Three kinds of failure, because the agent treats them differently: `Unreachable` (no answer,
a timeout, a 5xx: try again later, keep buffering), its kind `RetryLater` (429, or 503 with a
Retry-After header: the control plane is busy and says when to come back; nothing it was sent
is lost, the agent backs off that long) and `Refused` (another 4xx: the control plane heard and
said no; resending the same request will not help).

Safe to share between threads: a ControlPlane holds only its URL, token and timeout, and every
call opens its own connection through an opener of its own. The agent still gives its
heartbeat thread a copy(), so a slow sample upload never waits in line with a heartbeat.
"""
import http.client
import json
import urllib.error
import urllib.request

#: Back-off when a 429 names no Retry-After.
DEFAULT_RETRY_AFTER_S = 5.0
#: Never wait longer than this on one Retry-After (a bad header must not silence the agent).
MAX_RETRY_AFTER_S = 300.0


class Unreachable(OSError):
    """The control plane did not answer usefully; the request may be retried."""


class RetryLater(Unreachable):
    """The control plane is overloaded (429, or 503 with Retry-After): send again after `after_s`."""

    def __init__(self, message: str, after_s: float):
        self.after_s = after_s
        super().__init__(message)


class Refused(Exception):
    """The control plane answered 4xx; `status` and the decoded `body` say why."""

    def __init__(self, status: int, body):
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}: {body}")


def retry_after_s(header: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds; an HTTP date is not worth the clock
    trouble and counts as absent), within [0, MAX_RETRY_AFTER_S]; None when absent or unreadable."""
    try:
        seconds = float(header)
    except (TypeError, ValueError):
        return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class ControlPlane:
    def __init__(self, url: str, token: str, timeout: float = 10.0):
        self.url, self._token, self._timeout = url.rstrip("/"), token, timeout
        self._opener = urllib.request.build_opener()

    def copy(self) -> "ControlPlane":
        """The same control plane through a client of its own (for another thread)."""
        return ControlPlane(self.url, self._token, self._timeout)

    def register(self, report: dict) -> dict:
        return self._call("POST", "/api/nodes/register/", report)

    def heartbeat(self, node_id: int, body: dict | None = None) -> dict:
        """`body`: {} or {"driver_version": ...} (a control plane that knows the field)."""
        return self._call("POST", f"/api/nodes/{node_id}/heartbeat/", body or {})

    def leaving(self, node_id: int) -> dict:
        return self._call("POST", f"/api/nodes/{node_id}/leaving/", {})

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

    def job_progress_batch(self, reports: list[dict]) -> list[dict]:
        """One answer per report, in order: {"job", "status" (200, 400, 403, 409), ...}."""
        answer = self._call("POST", "/api/telemetry/job-progress/batch/", {"reports": reports})
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise Unreachable(f"POST /api/telemetry/job-progress/batch/: unexpected answer {str(answer)[:200]}")
        return results

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
            with self._opener.open(request, timeout=self._timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise self._failure(method, path, error) from error
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise Unreachable(f"{method} {path}: {getattr(error, 'reason', error)}") from error
        try:
            return json.loads(raw or b"null")
        except ValueError as error:  # a proxy's error page, a truncated body
            raise Unreachable(f"{method} {path}: an answer that is not JSON") from error

    @staticmethod
    def _failure(method: str, path: str, error: urllib.error.HTTPError) -> Exception:
        """The exception for an HTTP error answer (see the module's docstring)."""
        raw = error.read()
        after = retry_after_s(error.headers.get("Retry-After"))
        if error.code == 429 or (error.code == 503 and after is not None):
            return RetryLater(f"{method} {path}: HTTP {error.code}, retry after {after} s",
                              DEFAULT_RETRY_AFTER_S if after is None else after)
        if error.code >= 500:
            return Unreachable(f"{method} {path}: HTTP {error.code}")
        try:
            detail = json.loads(raw)
        except ValueError:
            detail = raw.decode(errors="replace")[:500]
        return Refused(error.code, detail)

