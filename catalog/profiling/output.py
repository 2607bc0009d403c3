"""What a suite run writes: GOGH_MEASUREMENT lines (the line protocol of docs/profiling.md),
rows of the measurements CSV (docs/measurements-csv.md) and a table for people.

An out-of-memory case is kept as a measurement of throughput 0 ("does not fit" is a fact
about the GPU's memory); an error or a timeout is not a measurement: its line says so with a
null throughput, and it gets no CSV row.
"""
import csv
import math
from datetime import UTC, datetime

from ..measurement_csv import COLUMNS
from . import SUITE_VERSION

LINE_KEYS = ("case", "workload", "num_gpus", "consolidated", "partner", "throughput", "partner_throughput",
             "power_w", "utilization", "memory_gb", "ci_low", "ci_high", "steps_timed", "suite_version")


def reference(case_name: str) -> str:
    return f"gogh-suite/{SUITE_VERSION}/{case_name}"


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return round(value, 6) if isinstance(value, float) else value


def measurement(result: dict) -> dict:
    """The line protocol's object for one case's result."""
    line = {key: _finite(result.get(key)) for key in LINE_KEYS}
    line.update(consolidated=True, suite_version=SUITE_VERSION)
    error = result.get("error")
    if error is None:
        return line
    fits = 0.0 if error == "oom" else None
    line.update(throughput=fits, partner_throughput=fits if result.get("partner") else None, power_w=None,
                utilization=None, memory_gb=None, ci_low=None, ci_high=None, steps_timed=0,
                error=error, message=result.get("message", ""))
    return line


def csv_row(result: dict, gpu_type: str, observed_at: datetime | None = None) -> dict | None:
    """The CSV row of a result, or None for one that is not a measurement (error, timeout)."""
    if result.get("error") not in (None, "oom"):
        return None
    line = measurement(result)
    when = (observed_at or datetime.now(UTC)).isoformat(timespec="seconds")
    row = {
        "workload": line["workload"], "gpu_type": gpu_type, "num_gpus": line["num_gpus"], "consolidated": "true",
        "partner": line["partner"], "throughput": line["throughput"], "partner_throughput": line["partner_throughput"],
        "power_w": line["power_w"], "utilization": line["utilization"], "memory_gb": line["memory_gb"],
        "source": "profiling", "observed_at": when, "reference": reference(line["case"]),
    }
    return {column: "" if row[column] is None else row[column] for column in COLUMNS}


class CsvOut:
    """The CSV file, written row by row (flushed), so a suite stopped half-way keeps its rows."""

    def __init__(self, path, gpu_type: str):
        self._handle = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._handle, fieldnames=COLUMNS)
        self._writer.writeheader()
        self._gpu_type = gpu_type
        self.rows = 0

    def add(self, result: dict) -> None:
        row = csv_row(result, self._gpu_type)
        if row is not None:
            self._writer.writerow(row)
            self._handle.flush()
            self.rows += 1

    def close(self) -> None:
        self._handle.close()


def describe(result: dict) -> str:
    """One line for people: the case, then its rate and interval or its failure."""
    seconds = f"{result.get('seconds', 0):6.1f} s"
    if result.get("error"):
        return f"{result['case']:<58} {result['error']:>7}  {seconds}  {result.get('message', '')}"
    parts = [f"{result['throughput']:10.3f} steps/s"]
    if math.isfinite(result.get("ci_high", math.inf)) and result["throughput"] > 0:
        parts.append(f"+-{(result['ci_high'] - result['ci_low']) / 2 / result['throughput'] * 100:4.1f}%")
    if result.get("partner_throughput") is not None:
        parts.append(f"partner {result['partner_throughput']:.3f}")
    if result.get("memory_gb") is not None:
        parts.append(f"{result['memory_gb']:.1f} GiB")
    if result.get("power_w") is not None:
        parts.append(f"{result['power_w']:.0f} W")
    return f"{result['case']:<58} {'ok':>7}  {seconds}  {'  '.join(parts)}"
