"""The measurements CSV format (docs/measurements-csv.md): a reader that checks syntax only.

No Django: `import_measurements` reads files through here, and so do the benchmarks'
--data/--truth/--catalog options, which run without a database. Names (workloads, GPU types,
partners) are only checked for presence here; whether they exist is the catalog's business
(catalog.services.measurements_import), which reports unknown names in the same
`file:line: reason` form.

Every problem is collected, not just the first, so one run shows a user all they must fix.
"""
import csv
import io
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .measurement_limits import MAX_NUM_GPUS, limit_problems
from .measurement_record import MeasurementRecord

COLUMNS = (
    "workload",
    "gpu_type",
    "num_gpus",
    "consolidated",
    "partner",
    "throughput",
    "partner_throughput",
    "power_w",
    "utilization",
    "memory_gb",
    "source",
    "observed_at",
    "reference",
)
REQUIRED_COLUMNS = ("workload", "gpu_type", "throughput")
SOURCES = ("profiling", "telemetry", "shadow", "reference")
DEFAULT_SOURCE = "profiling"
#: Limit of the reference column, checked here so a bad file fails with a line number (the
#: physical limits of the values are measurement_limits').
MAX_REFERENCE_LENGTH = 200


@dataclass(frozen=True, slots=True)
class RowError:
    """A problem at a line of a file; line is None for problems of the whole file (missing)."""

    path: str
    line: int | None
    reason: str

    def __str__(self):
        return f"{self.path}: {self.reason}" if self.line is None else f"{self.path}:{self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class RowNames:
    """The names a data row gives, valid or not, so a caller can check them all at once."""

    line: int
    workload: str
    gpu_type: str
    partner: str  # "" when the row names none


@dataclass
class ParsedFile:
    """What parse_measurements found: the records of the rows that passed, by the line each starts
    at (the header is line 1), every problem, and all rows' names."""

    records: dict[int, MeasurementRecord] = field(default_factory=dict)
    errors: list[RowError] = field(default_factory=list)
    names: list[RowNames] = field(default_factory=list)


class MeasurementFileError(ValueError):
    """A measurements file with problems; `errors` lists every one, in line order."""

    def __init__(self, errors: list[RowError]):
        self.errors = sorted(errors, key=lambda e: e.line or 0)
        super().__init__("\n".join(str(e) for e in self.errors))


class _BadValue(ValueError):
    pass


def read_measurements(path: Path | str) -> list[MeasurementRecord]:
    """The records of a valid file, in file order, or MeasurementFileError listing every problem."""
    parsed = parse_measurements(path)
    if parsed.errors:
        raise MeasurementFileError(parsed.errors)
    return list(parsed.records.values())


def parse_measurements(path: Path | str) -> ParsedFile:
    """The valid rows, the problems and every row's names; a caller adding its own checks
    (such as whether the names exist) merges its problems with these."""
    name = str(path)
    text, error = _read_text(path)
    if error is not None:
        return ParsedFile(errors=[error])
    if nul_lines := _lines_with_nul(text):
        return ParsedFile(errors=[RowError(name, line, "contains a NUL character (byte 0x00), which text may not "
                                                       "contain") for line in nul_lines])
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)  # strict: a stray quote is an error
    parsed = ParsedFile()
    header: list[str] | None = None
    header_line = 1
    try:
        while True:
            line = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                break
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header, header_line = [f.strip() for f in fields], line
                header_errors = _check_header(header)
                if header_errors:
                    return ParsedFile(errors=[RowError(name, line, reason) for reason in header_errors])
                continue
            if len(fields) != len(header):
                parsed.errors.append(RowError(name, line, f"expected {len(header)} fields, found {len(fields)}"))
                continue
            raw = {column: value.strip() for column, value in zip(header, fields)}
            parsed.names.append(RowNames(line, raw["workload"], raw["gpu_type"], raw.get("partner", "")))
            record, reasons = _parse_row(raw)
            parsed.errors.extend(RowError(name, line, reason) for reason in reasons)
            if record is not None:
                parsed.records[line] = record
    except csv.Error as exc:
        # The record that starts at `line` broke the syntax. An opening quote never closed swallows
        # every later line into one field: say so, rather than count the fields of the jumble.
        unclosed = "unexpected end of data" in str(exc)
        reason = 'a quoted field opened on this line is never closed (a " is missing)' if unclosed else (
            f"not valid CSV: {exc}")
        parsed.errors.append(RowError(name, line, reason))
    if header is None and not parsed.errors:
        parsed.errors.append(RowError(name, 1, "empty file: expected a header row"))
    elif header is not None and not parsed.records and not parsed.errors:
        parsed.errors.append(RowError(name, header_line, "no measurements after the header"))
    return parsed


def _read_text(path: Path | str) -> tuple[str, RowError | None]:
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return "", RowError(name, None, "no such file")
    except IsADirectoryError:
        return "", RowError(name, None, "is a directory, not a file")
    except OSError as exc:
        return "", RowError(name, None, f"cannot read: {exc.strerror or exc}")
    try:
        return raw.decode("utf-8-sig"), None  # -sig: spreadsheets often start the file with a BOM
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return "", RowError(name, line, f"not UTF-8 text (byte 0x{raw[exc.start]:02x})")


def _lines_with_nul(text: str) -> list[int]:
    """Lines holding a NUL: Python's csv reads it as any character, but no database column can
    hold it (PostgreSQL refuses it when a name is looked up, with a traceback, not a line)."""
    if "\0" not in text:
        return []
    return [number for number, line in enumerate(text.split("\n"), start=1) if "\0" in line]


def _check_header(header: list[str]) -> list[str]:
    reasons = [f"unknown column {c!r} (columns: {', '.join(COLUMNS)})" for c in header if c not in COLUMNS]
    reasons += [f"column {c!r} appears more than once" for c in sorted({c for c in header if header.count(c) > 1})]
    reasons += [f"missing required column {c!r}" for c in REQUIRED_COLUMNS if c not in header]
    return reasons


def _parse_row(raw: dict[str, str]) -> tuple[MeasurementRecord | None, list[str]]:
    values, reasons = {}, []
    for column, text in raw.items():
        if text == "":
            if column in REQUIRED_COLUMNS:
                reasons.append(f"{column} is empty")
            continue
        try:
            values[column] = _PARSERS[column](text)
        except _BadValue as exc:
            reasons.append(f"{column}: {exc}")
    if "partner_throughput" in values and "partner" not in values:
        reasons.append("partner_throughput given without a partner")
    if not reasons:
        limits = {k: values[k] for k in ("throughput", "partner_throughput", "power_w", "num_gpus", "memory_gb",
                                         "observed_at") if k in values}
        problems = limit_problems(now=datetime.now(UTC), **limits)
        reasons += [f"{column}: {reason}" for column, reason in problems.items()]
    if reasons:
        return None, reasons
    return MeasurementRecord(**{"source": DEFAULT_SOURCE, **values}), []


def _text(text: str) -> str:
    return text


def _reference(text: str) -> str:
    if len(text) > MAX_REFERENCE_LENGTH:
        raise _BadValue(f"longer than {MAX_REFERENCE_LENGTH} characters")
    return text


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _BadValue(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise _BadValue(f"{text!r} is not a finite number")
    if value < 0:
        raise _BadValue(f"{text} is negative")
    return value


def _utilization(text: str) -> float:
    value = _number(text)
    if value > 1:
        raise _BadValue(f"{text} is not within 0..1 (a fraction, not a percentage)")
    return value


def _num_gpus(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _BadValue(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_NUM_GPUS:
        raise _BadValue(f"{value} is not between 1 and {MAX_NUM_GPUS}")
    return value


def _boolean(text: str) -> bool:
    word = text.lower()
    if word in ("true", "false"):
        return word == "true"
    raise _BadValue(f"{text!r} is not true or false")


def _source(text: str) -> str:
    if text not in SOURCES:
        raise _BadValue(f"unknown source {text!r} (sources: {', '.join(SOURCES)})")
    return text


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise _BadValue(f"{text!r} is not an ISO 8601 timestamp") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise _BadValue(f"{text!r} has no timezone (add Z or an offset such as +02:00)")
    return value


_PARSERS = {
    "workload": _text,
    "gpu_type": _text,
    "num_gpus": _num_gpus,
    "consolidated": _boolean,
    "partner": _text,
    "throughput": _number,
    "partner_throughput": _number,
    "power_w": _number,
    "utilization": _utilization,
    "memory_gb": _number,
    "source": _source,
    "observed_at": _timestamp,
    "reference": _reference,
}
