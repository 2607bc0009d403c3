"""The arithmetic of energy accounting, pure (no Django): a GPU's measured power as a step
function of time, and one allocation's share of it, cut at UTC midnights.

Times are POSIX seconds (floats). A raw sample's power holds until the next reading, at most
RAW_HOLD_S (ten missed 1 Hz readings: an agent's dropped samples are bridged, an outage is
not); a per-minute aggregate's mean holds for its minute. Time no reading covers draws nothing:
energy is what was measured. The GPU's power is split equally among the allocations open on it
at each instant (co-located jobs), and so is its time (GPU-seconds)."""
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime

RAW_HOLD_S = 10.0
MINUTE_S = 60.0
DAY_S = 86400.0


class PowerTrace:
    """A GPU's power over time from readings (start, watts or None: unread, hold seconds), sorted
    by start: each holds until the next starts or its hold ends. Energy over any span is a
    difference of two cumulative values (a bisection each), whatever the number of readings."""

    def __init__(self, readings: list[tuple[float, float | None, float]]):
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.powers: list[float] = []
        self.before: list[float] = []  # joules up to each reading's start
        total = 0.0
        for i, (start, power, hold) in enumerate(readings):
            end = start + hold
            if i + 1 < len(readings):
                end = min(end, readings[i + 1][0])
            self.starts.append(start)
            self.ends.append(end)
            self.powers.append(power or 0.0)
            self.before.append(total)
            total += (power or 0.0) * (end - start)

    def _cumulative(self, t: float) -> float:
        i = bisect_right(self.starts, t) - 1
        if i < 0:
            return 0.0
        return self.before[i] + self.powers[i] * (min(t, self.ends[i]) - self.starts[i])

    def joules(self, t0: float, t1: float) -> float:
        return self._cumulative(t1) - self._cumulative(t0)


def gpu_readings(raw: list[tuple[float, float | None]], minutes: list[tuple[float, float | None]]) -> list[tuple]:
    """One GPU's readings for a PowerTrace: its per-minute aggregates, and its raw samples in
    minutes that have none (a sample arriving late, after its minute was folded, waits for the
    next fold to be merged into it: the aggregate already stands for that minute)."""
    folded = {start for start, _ in minutes}
    readings = [(start, power, MINUTE_S) for start, power in minutes]
    readings += [(ts, power, RAW_HOLD_S) for ts, power in raw if ts - ts % MINUTE_S not in folded]
    readings.sort(key=lambda reading: reading[0])
    return readings


@dataclass(frozen=True)
class Piece:
    """Part of an allocation's window on one UTC day with one set of GPU sharers: its share of
    the GPU's energy (J) and time (GPU-seconds), `until` when it ends (what its usage decays from)."""

    day: date
    until: float
    joules: float
    gpu_s: float


def allocation_pieces(
    start: float, end: float, trace: PowerTrace, occupancy: list[tuple[float, float]]
) -> list[Piece]:
    """The allocation's share of its GPU over [start, end): `occupancy` holds the spans of every
    allocation on the GPU (this one's too; an open one ends at infinity), so that where n are
    open at once each gets 1/n of the power and of the time."""
    cuts = {start, end}
    cuts.update(t for span in occupancy for t in span if start < t < end)
    midnight = (start // DAY_S + 1) * DAY_S
    while midnight < end:
        cuts.add(midnight)
        midnight += DAY_S
    ordered = sorted(cuts)
    pieces = []
    for t0, t1 in zip(ordered, ordered[1:]):
        sharers = max(1, sum(1 for s, e in occupancy if s <= t0 < e))
        day = datetime.fromtimestamp(t0, tz=UTC).date()
        pieces.append(Piece(day, t1, trace.joules(t0, t1) / sharers, (t1 - t0) / sharers))
    return pieces
