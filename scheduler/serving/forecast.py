"""The request rate a round plans a service for: what it sees now, or what the same time of
day brought on earlier days scaled by today's trend, whichever is higher.

A round places replicas for the next round_s and a replica needs time to start, so planning for
the rate observed now is late on every rising edge of a diurnal curve. The seasonal estimate
looks `horizon_s` ahead on each of the last DAYS days (the mean rate within WINDOW_S of that
time), and multiplies it by the trend: the rate now over the mean rate at this time of day on
those days (clipped to TREND_BOUNDS, so one burst does not double tomorrow). With no history
(a new service), the forecast is the rate observed now. A spike nothing predicted is caught by
the rate observed now at the next round (the first one after it reaches the control plane).

Down, a plan waits (held_rate): its replicas are at least those the highest rate "now" of the
last SCALE_DOWN_WAIT_S needs, each minute's mean over NOW_WINDOW_S (Kubernetes' HPA waits 300 s
by default before it scales down), while each replica's T_min follows the forecast. Traffic that
just fell may rise again within a minute or two of noise, and a replica retired then is one to
start again, with its start-up, while the P99 is over its bound. Only the count is held: a T_min
held too asks faster GPUs of every replica, which training then lacks (docs/services.md).
"""
from collections.abc import Iterable

DAY_S = 86400.0
DAYS = 7
#: Samples within this many seconds of a time count as the rate at that time.
WINDOW_S = 900.0
#: The rate "now" is the mean of the samples of the last this many seconds.
NOW_WINDOW_S = 300.0
#: The rate planned for is the highest "now" of this many seconds back (one each SAMPLE_S).
SCALE_DOWN_WAIT_S = 300.0
SAMPLE_S = 60.0
#: How far back from now forecast_rate reads the samples.
RECENT_SPAN_S = NOW_WINDOW_S + SCALE_DOWN_WAIT_S
TREND_BOUNDS = (0.5, 2.0)


def _mean_near(samples: list[tuple[float, float]], at_s: float, window_s: float) -> float | None:
    rates = [rate for t, rate in samples if abs(t - at_s) <= window_s]
    return sum(rates) / len(rates) if rates else None


def current_rate(samples: Iterable[tuple[float, float]], now_s: float, window_s: float = NOW_WINDOW_S) -> float:
    """Mean request rate of the samples (time s, requests/s) of the last `window_s`; 0 without any."""
    rates = [rate for t, rate in samples if now_s - window_s <= t <= now_s]
    return sum(rates) / len(rates) if rates else 0.0


def held_rate(samples: Iterable[tuple[float, float]], now_s: float) -> float:
    """The highest current_rate at now and at each SAMPLE_S back to SCALE_DOWN_WAIT_S ago: the rate
    whose replicas a plan keeps (replicas.plan_replicas' `hold_rps`), down only once the rate has
    stayed lower that long."""
    samples = list(samples)
    steps = int(SCALE_DOWN_WAIT_S // SAMPLE_S)
    return max(current_rate(samples, now_s - k * SAMPLE_S) for k in range(steps + 1))


def forecast_rate(
    samples: Iterable[tuple[float, float]], now_s: float, horizon_s: float, *, days: int = DAYS,
) -> float:
    """Requests per second to plan for over the next `horizon_s` (see the module docstring).
    `samples`: (time in s, requests/s), in any order; times on the same clock as now_s."""
    samples = [(float(t), float(rate)) for t, rate in samples if t <= now_s]
    now = current_rate(samples, now_s)
    ahead, here = [], []
    for day in range(1, days + 1):
        back = now_s - day * DAY_S
        rate_ahead = _mean_near(samples, back + horizon_s, WINDOW_S)
        rate_here = _mean_near(samples, back, WINDOW_S)
        if rate_ahead is not None and rate_here is not None:
            ahead.append(rate_ahead)
            here.append(rate_here)
    if not ahead:
        return now
    mean_here = sum(here) / len(here)
    low, high = TREND_BOUNDS
    trend = min(max(now / mean_here, low), high) if mean_here > 0 else 1.0
    return max(now, trend * sum(ahead) / len(ahead))
