"""What a run's services truly gave, minute by minute (the `services` keys of the report).

Each minute, a service's requests (its trace's rate) split evenly over its running replicas (placed,
restart overhead paid); its P99 is the worst running replica's true P99 (services.SimService.
true_p99_ms at the replica's true speed, slowed by any partner); the minute is violated when that
is above the bound or when no replica runs.

Utilisation of a GPU hosting a replica: the replica's busy fraction lambda / mu (its requests over
what it can serve, mu = true steps/s x batch; 0 while it starts) plus, for each training partner on
the GPU, the partner's co-located fraction (its speed there over its speed alone: the share of the
GPU's time it keeps busy), capped at 1; averaged over the GPU-minutes of GPUs hosting a replica.
Energy: the replicas' share of their GPUs' power (a shared GPU split evenly, as the ledger does).
"""
import math
from collections import defaultdict
from dataclasses import dataclass

from .services import MINUTE_S, SimService

#: Rounds after the spike within which the P99 must be back under the bound for the figure.
MAX_ROUNDS_SEEN = 50


@dataclass(frozen=True)
class ReplicaNow:
    """One placed replica over a stretch of time, as the truth has it."""

    service: str
    steps_per_s: float  # true, with its partners
    ready_at: float  # when its restart overhead is paid
    partner_busy: float  # sum of its partners' co-located fractions (0 alone)
    power_w: float  # its share of its GPU's power


class ServiceWatch:
    def __init__(self, services: tuple[SimService, ...], traces: dict[str, tuple[float, ...]], round_s: float):
        self.services = {s.id: s for s in services}
        self.traces, self.round_s = traces, round_s
        self.violated: dict[str, dict[int, bool]] = defaultdict(dict)  # service -> minute -> violated
        self.latest: dict[str, tuple[float, float]] = {}  # service -> (rate, worst P99) of its latest minute
        self.energy_j: dict[str, float] = defaultdict(float)
        self.replica_s: dict[str, float] = defaultdict(float)
        self.busy_gpu_min = 0.0  # sum of utilisation x minutes
        self.gpu_min = 0.0
        self.span_s = 0.0
        self.moves = 0

    def segment(self, t0: float, t1: float, replicas: list[ReplicaNow]) -> None:
        """[t0, t1) with these replicas placed."""
        dt = max(0.0, t1 - t0)
        self.span_s += dt
        by_service = defaultdict(list)
        for r in replicas:
            self.energy_j[r.service] += r.power_w * dt
            self.replica_s[r.service] += dt
            by_service[r.service].append(r)
        for minute in range(math.ceil(t0 / MINUTE_S), math.ceil(t1 / MINUTE_S)):
            at = minute * MINUTE_S
            for sid, service in self.services.items():
                trace = self.traces[sid]
                if minute < len(trace):
                    self._minute(service, minute, at, trace[minute], by_service.get(sid, []))

    def _minute(self, service: SimService, minute: int, at: float, rate: float, placed: list[ReplicaNow]) -> None:
        running = [r for r in placed if r.ready_at <= at and r.steps_per_s > 0]
        per = rate / len(running) if running else rate
        worst = max((service.true_p99_ms(r.steps_per_s, per) for r in running), default=math.inf)
        self.violated[service.id][minute] = worst > service.bound_ms
        self.latest[service.id] = (rate, worst)
        for r in placed:
            busy = min(1.0, per / (r.steps_per_s * service.batch_size)) if r in running else 0.0
            self.busy_gpu_min += min(1.0, busy + r.partner_busy)
            self.gpu_min += 1.0

    def spike(self) -> tuple[int | None, int | None]:
        """(rounds to adjust, minutes violated) after the spike of the spiked service: the time
        from its onset to the first minute from which its P99 stays under the bound for a whole
        round, in rounds (rounded up: 2 = within two rounds of the spike); and its violated
        minutes in that time. None, None: no spike in the run, or the P99 never held within
        MAX_ROUNDS_SEEN rounds."""
        spiked = [s for s in self.services.values() if s.spike_at_s is not None]
        if not spiked:
            return None, None
        service = spiked[0]
        minutes = self.violated[service.id]
        per_round = round(self.round_s / MINUTE_S)
        onset = math.ceil(service.spike_at_s / MINUTE_S)
        for start in range(onset, onset + MAX_ROUNDS_SEEN * per_round):
            seen = [minutes.get(m) for m in range(start, start + per_round)]
            if None in seen:
                return None, None
            if not any(seen):
                rounds = math.ceil((start - onset) * MINUTE_S / self.round_s)
                return rounds, sum(minutes[m] for m in range(onset, start))
        return None, None

    def metrics(self) -> dict:
        minutes = sum(len(v) for v in self.violated.values())
        bad = sum(sum(v.values()) for v in self.violated.values())
        rounds, violated = self.spike()
        return {
            "p99_violation_minutes_pct": round(100.0 * bad / minutes, 3) if minutes else None,
            "mean_gpu_utilization": round(self.busy_gpu_min / self.gpu_min, 4) if self.gpu_min else None,
            "energy_kwh": round(sum(self.energy_j.values()) / 3.6e6, 3),
            "replicas_mean": round(sum(self.replica_s.values()) / self.span_s, 3) if self.span_s else None,
            "spike_rounds_to_adjust": rounds,
            "spike_violated_minutes": violated,
            "service_minutes": minutes,
            "replica_moves": self.moves,
            "by_service": {
                sid: {
                    "p99_violation_minutes_pct": round(100.0 * sum(v.values()) / len(v), 3) if v else None,
                    "replicas_mean": round(self.replica_s[sid] / self.span_s, 3) if self.span_s else None,
                    "energy_kwh": round(self.energy_j[sid] / 3.6e6, 3),
                }
                for sid, v in sorted(self.violated.items())
            },
        }
