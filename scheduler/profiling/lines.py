"""One GOGH_MEASUREMENT line of a suite run, read and checked. Pure: no Django.

The suite prints `GOGH_MEASUREMENT <one-line JSON object>` per case (docs/profiling.md); the
agent forwards the JSON text as it is, so that a line it cannot read is judged here and
recorded as the case's failure, not lost on the node. `read_line` returns what the line says
or raises BadLine with the reason (and the case, when the line names one).
"""
import json
import math
from dataclasses import dataclass

FAILURE_KINDS = ("oom", "error", "timeout")
#: The numeric keys a line may carry beside its throughput (null or a finite number >= 0).
_READINGS = ("partner_throughput", "power_w", "utilization", "memory_gb", "ci_low", "ci_high")
#: What a failure message keeps of a bad line (it is stored on the campaign).
MAX_MESSAGE = 300


class BadLine(ValueError):
    def __init__(self, reason: str, case: str = ""):
        super().__init__(reason)
        self.reason, self.case = reason, case


@dataclass(frozen=True)
class Result:
    """A case's outcome. `kind` is "measured", or a failure kind (oom, error, timeout); an oom
    is also a measurement (throughput 0: the configuration does not fit)."""

    case: str
    kind: str
    workload: str
    num_gpus: int
    consolidated: bool
    partner: str | None
    throughput: float | None
    partner_throughput: float | None
    power_w: float | None
    utilization: float | None
    memory_gb: float | None
    suite_version: str
    message: str

    @property
    def is_measurement(self) -> bool:
        return self.kind in ("measured", "oom")


def read_line(text: str) -> Result:
    """What one line's JSON says, checked; BadLine with the reason otherwise."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadLine(f"not JSON ({exc})", _case_in(text)) from None
    if not isinstance(data, dict):
        raise BadLine("not a JSON object")
    case = data.get("case")
    if not isinstance(case, str) or not case.strip():
        raise BadLine("no case name")
    try:
        return _result(case, data)
    except BadLine as exc:
        raise BadLine(exc.reason, case) from None


def _result(case: str, data: dict) -> Result:
    workload = _text(data, "workload")
    partner = data.get("partner")
    if partner is not None and (not isinstance(partner, str) or not partner.strip()):
        raise BadLine("partner must be a workload name or null")
    num_gpus = data.get("num_gpus", 1)
    if not isinstance(num_gpus, int) or isinstance(num_gpus, bool) or num_gpus < 1:
        raise BadLine(f"num_gpus must be an integer >= 1, not {num_gpus!r}")
    consolidated = data.get("consolidated", True)
    if not isinstance(consolidated, bool):
        raise BadLine(f"consolidated must be true or false, not {consolidated!r}")
    kind = data.get("error") or "measured"
    if kind != "measured" and kind not in FAILURE_KINDS:
        raise BadLine(f"error must be one of {', '.join(FAILURE_KINDS)}, not {kind!r}")
    readings = {key: _number(data, key) for key in _READINGS}
    if readings["utilization"] is not None and readings["utilization"] > 1:
        raise BadLine(f"utilization must lie within 0..1, not {readings['utilization']:g}")
    throughput = _number(data, "throughput")
    if kind == "oom":
        throughput = 0.0  # does not fit: a fact about memory, kept as a measurement
    elif kind == "measured" and throughput is None:
        raise BadLine("a measured case needs a throughput")
    message = data.get("message") or ""
    if not isinstance(message, str):
        raise BadLine("message must be a string")
    version = data.get("suite_version") or ""
    if not isinstance(version, str):
        raise BadLine("suite_version must be a string")
    return Result(
        case=case, kind=kind, workload=workload, num_gpus=num_gpus, consolidated=consolidated, partner=partner,
        throughput=throughput if kind in ("measured", "oom") else None,
        partner_throughput=readings["partner_throughput"], power_w=readings["power_w"],
        utilization=readings["utilization"], memory_gb=readings["memory_gb"], suite_version=version,
        message=message[:MAX_MESSAGE],
    )


def _text(data: dict, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadLine(f"{key} must be a non-empty string")
    return value


def _number(data: dict, key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise BadLine(f"{key} must be a finite number >= 0 or null, not {value!r}")
    return float(value)


def _case_in(text: str) -> str:
    """The case a line that is not JSON names, if its start can be read (`{"case": "..."`)."""
    head = text.lstrip()
    prefix = '{"case": "'
    if head.startswith(prefix) and (end := head.find('"', len(prefix))) > 0:
        return head[len(prefix):end]
    return ""
