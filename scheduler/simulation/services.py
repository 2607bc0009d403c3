"""Inference services in the services+training scenario (`simulate --services`, docs/simulation.md):
who they are, their request traces, and what they truly do.

A service answers requests in batches of `batch_size` with its workload: one step is one batch,
so at `s` steps per second a replica serves s x batch_size requests per second. Its request
rate follows a day: a cosine between `peak_rps` (at `peak_hour`) and peak_rps / peak_over_trough
(twelve hours later), times a per-minute noise exp(N(0, TRACE_NOISE)); one service also gets a
sudden `spike_factor` x burst of `spike_s` seconds at `spike_at_s` that nothing in its history
predicts.

The truth (per service, drawn from the seed): its speed is the truth's speed of its workload
(truth.py, which already departs from the catalog) x `speed_factor`, uniform in 1 +- SPEED_SPREAD,
which no prediction knows; its P99 is the latency model's (scheduler/serving/latency.py) at its
true speed with its own calibration `calibration`, uniform in CALIBRATION_RANGE (the serving
stack's overhead over the model), which the policies learn only from the P99s it reports.
"""
import math
import random
from dataclasses import dataclass

from scheduler.serving.latency import p99_ms

MINUTE_S = 60.0
DAY_S = 86400.0
#: Per-minute noise of a trace (log scale).
TRACE_NOISE = 0.05
#: A service's true speed is its workload's x U(1 - SPREAD, 1 + SPREAD).
SPEED_SPREAD = 0.2
#: A service's true latency is the model's x U(*CALIBRATION_RANGE).
CALIBRATION_RANGE = (0.9, 1.3)


@dataclass(frozen=True)
class SimService:
    id: str
    workload: str
    batch_size: int
    bound_ms: float  # the SLO: P99 <= bound_ms
    peak_rps: float
    peak_over_trough: float = 4.0
    peak_hour: float = 14.0
    min_replicas: int = 1
    max_replicas: int = 8
    spike_at_s: float | None = None
    spike_s: float = 2 * 3600.0
    spike_factor: float = 3.0
    speed_factor: float = 1.0  # the truth: its true speed over its workload's
    calibration: float = 1.0  # the truth: its true P99 over the latency model's

    def diurnal_rps(self, t: float) -> float:
        """The rate of the day's curve at time t (no noise, no spike)."""
        trough = self.peak_rps / self.peak_over_trough
        phase = 2.0 * math.pi * (t / 3600.0 - self.peak_hour) / 24.0
        return trough + (self.peak_rps - trough) * (1.0 + math.cos(phase)) / 2.0

    def spiking(self, t: float) -> bool:
        return self.spike_at_s is not None and self.spike_at_s <= t < self.spike_at_s + self.spike_s

    def true_p99_ms(self, steps_per_s: float, arrival_rps: float) -> float:
        """What a replica truly gives at its true speed and load (inf: it cannot keep up)."""
        return p99_ms(steps_per_s, arrival_rps, self.batch_size, self.calibration)


def request_trace(service: SimService, span_s: float, seed: int) -> tuple[float, ...]:
    """True requests per second of each minute of [0, span_s): the day's curve x noise x spike."""
    rng = random.Random(f"trace:{seed}:{service.id}")
    out = []
    for minute in range(math.ceil(span_s / MINUTE_S)):
        t = minute * MINUTE_S
        rate = service.diurnal_rps(t) * math.exp(rng.gauss(0.0, TRACE_NOISE))
        out.append(rate * (service.spike_factor if service.spiking(t) else 1.0))
    return tuple(out)


#: The scenario's services (id, workload, batch, bound ms, peak requests/s, peak hour): each bound
#: holds with the 20 % margin on some GPU types and not on others (unloaded P99 ~ (1 + ln 100 /
#: batch) / speed): the slowest type (K80) for vision, translation and language; for the
#: recommendation service (the seed's, at 50 ms) the V100, where Gavel measured it slowest.
SCENARIO_SERVICES = (
    ("recommendation", "Recommendation (batch size 512)", 512, 50.0, 24000.0, 13.0),
    ("vision", "ResNet-50 (batch size 16)", 16, 400.0, 180.0, 15.0),
    ("translation", "Transformer (batch size 32)", 32, 200.0, 400.0, 11.0),
    ("language", "LM (batch size 20)", 20, 60.0, 1500.0, 20.0),
)
#: The service whose traffic jumps: 3x for two hours at 10:03 on the second day (the minutes
#: before the next round see it; a round is 6 minutes).
SPIKED = "translation"
SPIKE_AT_S = DAY_S + 10 * 3600.0 + 180.0


def scenario_services(seed: int) -> tuple[SimService, ...]:
    """The four services with their true speed factors and calibrations drawn from the seed."""
    rng = random.Random(f"services:{seed}")
    out = []
    for sid, workload, batch, bound, peak, hour in SCENARIO_SERVICES:
        out.append(SimService(
            sid, workload, batch, bound, peak, peak_hour=hour,
            spike_at_s=SPIKE_AT_S if sid == SPIKED else None,
            speed_factor=rng.uniform(1.0 - SPEED_SPREAD, 1.0 + SPEED_SPREAD),
            calibration=rng.uniform(*CALIBRATION_RANGE),
        ))
    return tuple(out)
