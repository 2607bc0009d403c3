"""Simulated GPU health signals (`simulate --health`, docs/simulation.md): boards whose remapped
rows rise for some hours before the GPU fails, and one board braked for heat for a while.

What the agent would read of each board (telemetry.agent.nvml: remapped rows, clocks event
reasons, SM clock and its maximum) is `sample(gpu, t)`; the policies that use the health rule
feed it through telemetry.gpu_health.health_of, as the control plane's ingest does.
- `WARNED` boards (drawn from the seed among `pool`) fail at a time drawn in the middle half of
  the arrivals; from a lead of 6 to 24 h before that (drawn too) their remapped rows rise by one
  every eighth of the lead, the pattern of NVIDIA's row remapping and of the failures that field
  studies saw preceded by memory errors (docs/gpu_health.md).
- One board (another of `pool`) reports a hardware thermal slowdown for `THROTTLE_H` hours from
  30 % of the arrivals, its SM clock held at `THROTTLE_CLOCK` of its maximum; it truly runs at
  that fraction of its speed meanwhile (boards.py multiplies it in).
Pure Python, no Django.
"""
import random
from dataclasses import dataclass
from datetime import UTC, datetime

HOUR_S = 3600.0
WARNED = 3
LEAD_H = (6.0, 24.0)
THROTTLE_H = 12.0
THROTTLE_CLOCK = 0.6
MAX_CLOCK_MHZ = 1530.0
#: NVML's clocks event reason bits for the braked board: hardware thermal slowdown.
HW_THERMAL_SLOWDOWN = 0x40
SOFTWARE_POWER_CAP = 0x4


@dataclass(frozen=True)
class Warned:
    gpu: str
    fails_s: float
    warns_s: float  # the first remapped row


class HealthSignals:
    def __init__(self, pool, *, seed: int = 0, span_s: float = 0.0):
        rng = random.Random(f"health:{seed}")
        boards = rng.sample(sorted(pool), min(WARNED + 1, len(pool)))
        span = max(span_s, 2 * LEAD_H[1] * HOUR_S)
        self.warned = {}
        for gpu in boards[:WARNED]:
            fails = rng.uniform(0.25, 0.75) * span
            self.warned[gpu] = Warned(gpu, fails, fails - rng.uniform(*LEAD_H) * HOUR_S)
        self.throttled = boards[WARNED] if len(boards) > WARNED else None
        self.throttle_s = (0.3 * span, 0.3 * span + THROTTLE_H * HOUR_S)

    @property
    def failures(self) -> list[tuple[float, str]]:
        """(time, GPU) of each warned board's failure, in time order."""
        return sorted((w.fails_s, w.gpu) for w in self.warned.values())

    def signalled(self) -> set[str]:
        return {*self.warned, *([self.throttled] if self.throttled else [])}

    def braked(self, gpu: str, t: float) -> bool:
        return gpu == self.throttled and self.throttle_s[0] <= t < self.throttle_s[1]

    def clock_ratio(self, gpu: str, t: float) -> float:
        """The board's true speed factor from its brake (1: none)."""
        return THROTTLE_CLOCK if self.braked(gpu, t) else 1.0

    def remapped_rows(self, gpu: str, t: float) -> int:
        warned = self.warned.get(gpu)
        if warned is None or t < warned.warns_s:
            return 0
        step = (warned.fails_s - warned.warns_s) / 8
        return 1 + int((t - warned.warns_s) // step)

    def sample(self, gpu: str, t: float) -> dict:
        """What the agent would send for the board at `t` (the ingest's dict)."""
        braked = self.braked(gpu, t)
        return {
            "ts": datetime.fromtimestamp(t, UTC), "remapped_rows": self.remapped_rows(gpu, t),
            "throttle_reasons": HW_THERMAL_SLOWDOWN if braked else SOFTWARE_POWER_CAP,
            "sm_clock_mhz": MAX_CLOCK_MHZ * self.clock_ratio(gpu, t), "sm_clock_max_mhz": MAX_CLOCK_MHZ,
        }
