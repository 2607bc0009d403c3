"""An open-loop load generator for a service (telemetry.agent.serve_model, docs/jobs.md
"Services"): requests arrive as a Poisson process at --rate per second for --duration-s seconds,
whatever the service answers; each one's latency counts from its planned arrival, so a slow
service cannot slow the arrivals down and hide its queue (a closed loop, one request after the
other, would). Prints one JSON line: what it sent, what was answered, and its own P50 and P99.

    python -m telemetry.agent.load_generator --url http://127.0.0.1:8000/predict --rate 40 --duration-s 20

Exit status 0 when every request was answered 200, 1 when any failed (the line says how many and
the first reason), 2 for bad arguments. Standard library only.
"""
import argparse
import http.client
import json
import math
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit


def arrivals(rate: float, duration_s: float, rng: random.Random) -> list[float]:
    """Seconds from the start of each request of a Poisson process at `rate` per second."""
    times, at = [], rng.expovariate(rate)
    while at < duration_s:
        times.append(at)
        at += rng.expovariate(rate)
    return times


def percentile(ordered: list[float], q: float) -> float | None:
    """The nearest-rank q-th percentile of sorted values (no interpolation: a latency that was
    measured); None for none. serve_model's too."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else None


class Load:
    def __init__(self, url: str, *, timeout_s: float, clock=time.monotonic):
        self.url, self.timeout_s, self._clock = url, timeout_s, clock
        self.latencies_ms: list[float] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def fire(self, planned: float) -> None:
        """One request, planned for `planned` (the clock's time); its latency from then."""
        request = urllib.request.Request(self.url, data=b"{}", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            self._failed(f"HTTP {exc.code}")
        except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, reset, timed out, garbled
            self._failed(str(getattr(exc, "reason", None) or exc))
        else:
            with self._lock:
                self.latencies_ms.append((self._clock() - planned) * 1000)

    def _failed(self, why: str) -> None:
        with self._lock:
            self.failures.append(why)


def run(url: str, *, rate: float, duration_s: float, seed: int, workers: int, timeout_s: float) -> dict:
    """Send the load and wait for every answer; -> the summary the command prints."""
    planned = arrivals(rate, duration_s, random.Random(seed))
    load = Load(url, timeout_s=timeout_s)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for offset in planned:
            time.sleep(max(0.0, start + offset - time.monotonic()))
            pool.submit(load.fire, start + offset)
    latencies = sorted(load.latencies_ms)
    return {
        "url": url, "sent": len(planned), "answered": len(latencies), "failed": len(load.failures),
        "duration_s": duration_s, "rate_rps": round(len(planned) / duration_s, 3),
        "p50_ms": _rounded(percentile(latencies, 50)), "p99_ms": _rounded(percentile(latencies, 99)),
        "first_failure": load.failures[0] if load.failures else None,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def positive_number(kind):
    """An argparse type: `kind` (int or float) above 0 and finite (serve_model's too)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{text} is not above 0")
        return value

    return parse


def _url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL with a host")
    return text


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="load_generator", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", type=_url, required=True, help="Where to POST each request (the service's /predict).")
    parser.add_argument("--rate", type=positive_number(float), required=True, help="Requests per second, on average.")
    parser.add_argument("--duration-s", type=positive_number(float), required=True, help="Seconds of arrivals.")
    parser.add_argument("--seed", type=int, default=0, help="The arrivals' random seed (the same seed, the same load).")
    parser.add_argument("--workers", type=positive_number(int), default=64,
                        help="Requests in flight at most; beyond them a request starts late and its latency shows it.")
    parser.add_argument("--timeout-s", type=positive_number(float), default=10.0,
                        help="A request unanswered this long has failed.")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    summary = run(args.url, rate=args.rate, duration_s=args.duration_s, seed=args.seed, workers=args.workers,
                  timeout_s=args.timeout_s)
    print(json.dumps(summary), flush=True)
    if summary["failed"]:
        print(f"load_generator: {summary['failed']} of {summary['sent']} requests failed, the first: "
              f"{summary['first_failure']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
