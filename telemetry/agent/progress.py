"""The progress line protocol between a job and its agent, and the helper jobs call.

A job reports progress by printing one line to its standard output:

    GOGH_PROGRESS step=<steps done, integer >= 0> [total=<total steps, integer >= 1>]

Any other line is ordinary output and goes to the job's log unchanged. The agent computes
steps per second from the steps and its own clock; the job need not know time or rate.
From Python: `from telemetry.agent.progress import report; report(step, total=...)` (this file
has no dependencies, so a job may also copy it).
"""
import re
import sys

PREFIX = "GOGH_PROGRESS"
_LINE = re.compile(rf"^{PREFIX} step=(?P<step>\d+)(?: total=(?P<total>[1-9]\d*))?\s*$")


def parse(line: str) -> tuple[int, int | None] | None:
    """(step, total or None) for a progress line, None for any other line."""
    match = _LINE.match(line)
    if match is None:
        return None
    total = match["total"]
    return int(match["step"]), int(total) if total else None


def report(step: int, total: int | None = None, stream=None) -> None:
    """Tell the agent that `step` steps are done (flushed at once: the agent reads a pipe)."""
    stream = stream or sys.stdout
    suffix = f" total={total}" if total else ""
    stream.write(f"{PREFIX} step={int(step)}{suffix}\n")
    stream.flush()
