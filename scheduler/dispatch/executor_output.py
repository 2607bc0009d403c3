"""What a pushed run printed since the last sync: the job contract's lines (progress,
checkpoints, a campaign's measurements: telemetry.agent.progress) in the new whole lines of its
output file. A line still being written is left for the next sync, so the offset only ever
moves over whole lines; a file not there yet (the run has not started) is no news."""
import os
from dataclasses import dataclass, field

from telemetry.agent import progress

#: Bytes read from one run in one sync at most; the rest waits for the next sync.
READ_LIMIT = 4 * 1024 * 1024


@dataclass
class OutputNews:
    """The new lines' contract: the furthest step and the total given, the newest checkpoint
    (step, path), the measurement lines; `offset`: where the next read starts."""

    offset: int
    step: int | None = None
    total: int | None = None
    checkpoint: tuple[int, str] | None = None
    measurements: list[str] = field(default_factory=list)

    @property
    def reports(self) -> bool:
        return self.step is not None or self.checkpoint is not None or bool(self.measurements)


def output_grew(path: str, offset: int) -> bool:
    """Whether the file holds bytes beyond `offset` (one stat, no read)."""
    try:
        return bool(path) and os.stat(path).st_size > offset
    except OSError:
        return False


def output_read(path: str, offset: int) -> OutputNews:
    """The contract's lines among the whole lines of `path` from byte `offset`. A single line
    longer than READ_LIMIT is passed over (no contract line is that long)."""
    news = OutputNews(offset=offset)
    if not path:
        return news
    try:
        with open(path, "rb") as output:
            output.seek(offset)
            chunk = output.read(READ_LIMIT)
    except OSError:
        return news
    end = chunk.rfind(b"\n")
    if end < 0:
        news.offset = offset + (len(chunk) if len(chunk) == READ_LIMIT else 0)
        return news
    news.offset = offset + end + 1
    for line in chunk[:end].decode("utf-8", errors="replace").split("\n"):
        _note(news, line.rstrip("\r"))
    return news


def _note(news: OutputNews, line: str) -> None:
    """One line, as the agent's runner reads it: the furthest step, the newest checkpoint (a
    checkpoint at step S means S steps are done)."""
    if (parsed := progress.parse(line)) is not None:
        step, total = parsed
        news.step = step if news.step is None else max(news.step, step)
        news.total = total or news.total
    elif (checkpoint := progress.parse_checkpoint(line)) is not None:
        if news.checkpoint is None or checkpoint[0] >= news.checkpoint[0]:
            news.checkpoint = checkpoint
            news.step = checkpoint[0] if news.step is None else max(news.step, checkpoint[0])
    elif (measurement := progress.parse_measurement(line)) is not None:
        news.measurements.append(measurement)
