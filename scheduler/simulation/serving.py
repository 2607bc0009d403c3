"""How a policy serves the scenario's services each round (docs/simulation.md, "Inference services").

Shared (gogh and the baselines), as the control plane does (docs/services.md): every round, per
service, the rates its replicas reported over the last round (the trace with measurement noise
TELEMETRY_NOISE, one sample a minute) -> forecast.forecast_rate over the observed history ->
latency.Calibration.learnt from the P99 the service reported (the truth's worst replica of the latest
minute, with the same noise) at its slowest replica's predicted speed and its share of the rate
-> replicas.plan_replicas for the forecast (times 1 + RATE_HEADROOM there; the fastest single-GPU
speed the policy predicts for the workload, margin latency.DEFAULT_MARGIN, the setting's default)
-> that many replica jobs, each with the plan's steps/s as its T_min (plan_replicas caps it at that
fastest speed: a plan beyond it still runs).

Dedicated (`dedicated`, as operators provision without GOGH): each service gets, for the whole
run, the replicas plan_replicas gives at its diurnal peak rate with its true speed and true
calibration (an operator measures their service before provisioning it), on GPUs of its truly
fastest type that no other job ever shares (at the peak itself: its trace's noise and spike on top).

Replicas are jobs of the simulation (jobs.SimJob with `service` set): one GPU, no total steps to
speak of (REPLICA_STEPS, never reached); telemetry reports none of their throughput (engine.py:
as in the control plane, a replica's steps are no measurement of its workload or its board).
"""
import bisect
import math
import random
from dataclasses import dataclass, field

from scheduler.serving.forecast import DAYS, RECENT_SPAN_S, WINDOW_S, forecast_rate, held_rate
from scheduler.serving.latency import DEFAULT_MARGIN, Calibration
from scheduler.serving.replicas import ReplicaPlan, plan_replicas

from .jobs import SimJob
from .service_watch import ServiceWatch
from .services import DAY_S, MINUTE_S, SimService

#: SolverConfig.services_first's default: replicas are admitted before training jobs.
SERVICES_FIRST = True
#: Relative noise of a reported rate and P99.
TELEMETRY_NOISE = 0.05
#: A replica's steps to do: more than any run reaches, so it never completes.
REPLICA_STEPS = 1e12


def replica_job(service: SimService, number: int, t_min: float, arrival_s: float) -> SimJob:
    return SimJob(f"{service.id}-r{number}", service.workload, arrival_s, 1, REPLICA_STEPS, t_min,
                  service=service.id)


@dataclass
class ServiceState:
    service: SimService
    history: list[tuple[float, float]] = field(default_factory=list)  # (t, observed rps), by time
    calibration: Calibration = field(default_factory=Calibration)
    plan: ReplicaPlan | None = None


class ServiceLoop:
    """One policy's services over a run: their observed traffic, calibration and plan."""

    def __init__(self, services: tuple[SimService, ...], traces: dict[str, tuple[float, ...]], *, round_s: float,
                 seed: int, policy: str):
        self.state = {s.id: ServiceState(s) for s in services}
        self.traces, self.round_s = traces, round_s
        self.rng = random.Random(f"services:{seed}:{policy}")
        self.watch = ServiceWatch(services, traces, round_s)
        self.seen_minutes = 0

    def observe(self, t: float) -> None:
        """The replicas' reports of every minute up to t."""
        upto = math.floor(t / MINUTE_S)
        for minute in range(self.seen_minutes, upto):
            for sid, s in self.state.items():
                trace = self.traces[sid]
                if minute < len(trace):
                    s.history.append(((minute + 1) * MINUTE_S, self._noisy(trace[minute])))
        self.seen_minutes = max(self.seen_minutes, upto)

    def plan(self, t: float, best_speed, predicted_speeds: dict[str, list[float]],
             sure_speed) -> dict[str, ReplicaPlan]:
        """Each service's plan for the round at t. `best_speed(workload)`: the fastest single-GPU
        speed the policy predicts (None: unknown); `predicted_speeds`: service -> the predicted
        steps/s of its running replicas where they run (for the calibration); `sure_speed(workload)`:
        the fastest a replica may count on (replicas.surest_single_gpu, the cap of its T_min)."""
        self.observe(t)
        for sid, s in self.state.items():
            service = s.service
            latest = self.watch.latest.get(sid)
            speeds = predicted_speeds.get(sid) or []
            if latest is not None and speeds and all(v > 0 for v in speeds):
                rate, worst = latest
                s.calibration = s.calibration.learnt(min(speeds), rate / len(speeds), service.batch_size,
                                                     self._noisy(worst))
            samples = forecast_samples(s.history, t, self.round_s)
            rate = forecast_rate(samples, t, self.round_s)
            s.plan = plan_replicas(
                rate_rps=rate, bound_ms=service.bound_ms, batch_size=service.batch_size,
                min_replicas=service.min_replicas, max_replicas=service.max_replicas,
                best_steps_per_s=best_speed(service.workload), calibration=s.calibration.latency,
                speed_factor=s.calibration.speed, margin=DEFAULT_MARGIN, cap_steps_per_s=sure_speed(service.workload),
                hold_rps=held_rate(samples, t),
            )
        return {sid: s.plan for sid, s in self.state.items()}

    def _noisy(self, value: float) -> float:
        if not math.isfinite(value):
            return value
        return value * max(0.0, 1.0 + self.rng.gauss(0.0, TELEMETRY_NOISE))


def dedicated_plan(service: SimService, true_best_speed: float) -> ReplicaPlan:
    """The replicas an operator provisions for the service's peak, knowing its true speed and latency."""
    return plan_replicas(
        rate_rps=service.peak_rps, bound_ms=service.bound_ms, batch_size=service.batch_size,
        min_replicas=service.min_replicas, max_replicas=service.max_replicas, best_steps_per_s=true_best_speed,
        calibration=service.calibration, margin=DEFAULT_MARGIN,
    )


def forecast_samples(history: list[tuple[float, float]], t: float, horizon_s: float) -> list[tuple[float, float]]:
    """The samples forecast_rate reads at t (the last RECENT_SPAN_S, and around this time and
    `horizon_s` later on each of the last DAYS days): the same answer as the whole history."""
    times = [at for at, _ in history]
    out = []
    for day in range(DAYS + 1):
        back = t - day * DAY_S
        low, high = (back - RECENT_SPAN_S, back) if day == 0 else (back - WINDOW_S, back + horizon_s + WINDOW_S)
        out += history[bisect.bisect_left(times, low):bisect.bisect_right(times, high)]
    return out
