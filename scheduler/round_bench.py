"""The round benchmark's pure parts (`manage.py bench_round`): the synthetic telemetry history,
the phase clock and the report's table. The command builds the state and runs the round.

History: `measurements` telemetry rows spread evenly over `configurations` of the reference
catalog's single-job configurations, the newest last, each a reference throughput with 5 %
noise and one in fifty a tenfold outlier (which the catalog policy drops), so that the window
and the outlier rejection both have work to do.
"""
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PHASES = ("catalog_read_s", "problem_build_s", "solve_s", "apply_s", "events_s", "total_s")
OUTLIER_EVERY = 50
SECONDS_BETWEEN_ROWS = 0.01  # the history's time step: 1 M rows span under three hours


@dataclass(frozen=True)
class Configuration:
    """One measured configuration (ids of the scratch database) and its reference throughput."""

    workload_id: int
    gpu_type_id: int
    num_gpus: int
    consolidated: bool
    throughput: float


@dataclass(frozen=True)
class HistoryRow:
    configuration: Configuration
    throughput: float
    seconds_before_now: float


def history(configurations: list[Configuration], count: int, seed: int) -> Iterator[HistoryRow]:
    """`count` rows, round robin over `configurations`, oldest first."""
    rng = random.Random(seed)
    for n in range(count):
        configuration = configurations[n % len(configurations)]
        factor = 10.0 if n % OUTLIER_EVERY == OUTLIER_EVERY - 1 else rng.uniform(0.95, 1.05)
        yield HistoryRow(configuration, configuration.throughput * factor, (count - n) * SECONDS_BETWEEN_ROWS)


def pick_configurations(candidates: list[Configuration], count: int, seed: int) -> list[Configuration]:
    """`count` of the candidates (all of them when fewer), the same ones for the same seed."""
    ordered = sorted(candidates, key=lambda c: (c.workload_id, c.gpu_type_id, c.num_gpus, c.consolidated))
    return random.Random(seed).sample(ordered, min(count, len(ordered)))


class PhaseClock:
    """Seconds spent in each named phase, summed over calls (the events phase runs once per
    batch of events a round stores): wall-clock seconds, and this process's CPU seconds, which
    other processes' load does not inflate (the database server's work is not in them)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.cpu_seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str):
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started
            self.cpu_seconds[name] = self.cpu_seconds.get(name, 0.0) + time.process_time() - cpu_started

    def timed(self, name: str, function):
        """`function`, timing every call under `name`."""

        def wrapper(*args, **kwargs):
            with self.phase(name):
                return function(*args, **kwargs)

        return wrapper


@contextmanager
def replaced(owner, name: str, value):
    """`owner.name` is `value` for the duration (the command times a real round by wrapping the
    functions it calls), then what it was."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


class TimedSolver:
    """A solver whose solve() counts in the clock's solve phase."""

    def __init__(self, inner, clock: PhaseClock):
        self.solve = clock.timed("solve_s", inner.solve)


def format_table(report: dict) -> str:
    """One line per phase, then the counts that explain them."""
    round_, cpu = report["round"], report["round"]["cpu"]
    lines = [f"{'phase':<16} {'seconds':>8} {'cpu s':>8}"]
    lines += [f"{name.removesuffix('_s'):<16} {round_[name]:>8.3f} {cpu[name]:>8.3f}" for name in PHASES]
    lines.append("")
    lines.append(
        f"{report['database']}: {report['measurements']} measurements over {report['configurations']} telemetry "
        f"configurations (window {report['window']}), {report['gpus']} GPUs, {report['jobs']} pending jobs"
    )
    lines.append(f"load average (1 min) before and after: {report['load_before']} {report['load_after']}")
    lines.append(
        f"round: {round_['placed']} placed by {round_['solver']} ({round_['status']}), {round_['queries']} queries, "
        f"{round_['events']} events in {round_['event_batches']} batches, {round_['catalog_records']} catalog records "
        f"kept"
    )
    return "\n".join(lines)
