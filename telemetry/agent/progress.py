"""The line protocol between a job and its agent: the agent's parser, and the helper jobs call.

A job reports on its standard output, one line each (telemetry.agent.contract writes them):

    GOGH_PROGRESS step=<steps done, integer >= 0> [total=<total steps, integer >= 1>]
    GOGH_CHECKPOINT step=<steps the checkpoint holds, integer >= 0> path=<the rest of the line>
    GOGH_MEASUREMENT <one-line JSON object>   (the benchmark suite's result of one case)
    GOGH_TRAFFIC rate=<requests/s, number >= 0> [p99_ms=<ms, number >= 0>]   (a service's traffic)

Any other line (a malformed one too) is ordinary output and goes to the job's log unchanged.
The agent computes steps per second from the steps and its own clock; the job need not know
time or rate. A measurement line's JSON is forwarded as it is, in the job's reports: the
control plane judges it (docs/profiling.md), so that a line the agent could not read is
recorded as that case's failure rather than lost on the node. A traffic line is a service
replica's (docs/services.md): the agent keeps the latest and sends it with the job's next report.
From Python:
`from telemetry.agent.progress import report; report(step, total=...)`, or the contract's Job
(docs/jobs.md).
"""
import math
import re

from .contract import (
    CHECKPOINT_PREFIX,
    MEASUREMENT_PREFIX,
    PROGRESS_PREFIX,
    TRAFFIC_PREFIX,
    progress_line,
    write_line,
)

PREFIX = PROGRESS_PREFIX
#: The control plane keeps checkpoint paths up to this long: a longer one would be refused with
#: every report of the run, so it is not taken for a checkpoint line.
MAX_CHECKPOINT_PATH = 1000
_LINE = re.compile(rf"^{PREFIX} step=(?P<step>\d+)(?: total=(?P<total>[1-9]\d*))?\s*$")
_CHECKPOINT = re.compile(rf"^{CHECKPOINT_PREFIX} step=(?P<step>\d+) path=(?P<path>.*)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The control plane takes lines up to this long (a suite line is a few hundred characters).
MAX_MEASUREMENT_LINE = 4000
_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_TRAFFIC = re.compile(rf"^{TRAFFIC_PREFIX} rate=(?P<rate>{_NUMBER})(?: p99_ms=(?P<p99>{_NUMBER}))?\s*$")
#: Traffic beyond these is nonsense (a typo, a unit mistake): the control plane refuses it
#: (scheduler.serving.traffic), so the agent does not take such a line for a traffic line,
#: rather than have the job's report refused.
MAX_RATE_RPS = 1e7
MAX_P99_MS = 3.6e6


def parse(line: str) -> tuple[int, int | None] | None:
    """(step, total or None) for a progress line, None for any other line."""
    match = _LINE.match(line)
    if match is None:
        return None
    total = match["total"]
    return int(match["step"]), int(total) if total else None


def parse_checkpoint(line: str) -> tuple[int, str] | None:
    """(step, path) for a checkpoint line, None for any other line: also for an empty or blank
    path, one with control characters, or one longer than MAX_CHECKPOINT_PATH."""
    match = _CHECKPOINT.match(line)
    if match is None:
        return None
    path = match["path"]
    if not path.strip() or len(path) > MAX_CHECKPOINT_PATH or _CONTROL.search(path):
        return None
    return int(match["step"]), path


def parse_measurement(line: str) -> str | None:
    """The JSON text of a measurement line (cut at MAX_MEASUREMENT_LINE), None for any other line."""
    if not line.startswith(MEASUREMENT_PREFIX + " "):
        return None
    payload = line[len(MEASUREMENT_PREFIX) + 1:].strip()
    return payload[:MAX_MEASUREMENT_LINE] if payload else None


def parse_traffic(line: str) -> tuple[float, float | None] | None:
    """(requests per second, P99 in ms or None) for a traffic line, None for any other line:
    also for a number beyond MAX_RATE_RPS or MAX_P99_MS (or one that overflows to infinity)."""
    match = _TRAFFIC.match(line)
    if match is None:
        return None
    rate = float(match["rate"])
    p99 = float(match["p99"]) if match["p99"] is not None else None
    if not (math.isfinite(rate) and rate <= MAX_RATE_RPS) or (p99 is not None and not (
            math.isfinite(p99) and p99 <= MAX_P99_MS)):
        return None
    return rate, p99


def report(step: int, total: int | None = None, stream=None) -> None:
    """Tell the agent that `step` steps are done (flushed at once: the agent reads a pipe)."""
    write_line(progress_line(step, total), stream)
