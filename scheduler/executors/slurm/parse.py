"""Slurm's parseable output read into the executor interface's plain data: functions on text,
so that a benchmark or a test can feed recorded output of any size.

Read from `sinfo --json` (schema openapi/v0.0.38, Slurm 22.05), each of `nodes[]`:
`name`, `state` (the base state, e.g. "mixed"), `state_flags` (e.g. ["DRAIN"]), `gres`
("gpu:v100:4,shard:v100:8"), `reason`, and `partitions` only when a partition is asked for.

Read from `squeue --json` (same schema), each of `jobs[]`: `job_id`, `name`, `job_state`,
`state_reason`, `nodes`, `gres_detail` (["gpu:v100:2(IDX:0-1)"]), `exit_code` (the wait
status: 768 is exit 3, a low byte is the signal that killed the run), `start_time`,
`end_time` (epoch seconds, 0 for none), `user_name`. squeue lists ended jobs too, for
MinJobAge seconds after their end.

Read from `sacct -c -P -n -o jobid,jobname,state,nodelist,start,end,exitcode` (the jobcomp
file when the cluster has no slurmdbd): one line per job, `|`-separated; step lines
("12.batch") are skipped; a state may carry who did it ("CANCELLED by 0"); ExitCode is
"<status>:<signal>"; times are the Slurm machine's local time ("2026-12-02T11:07:43"), read in
this process's time zone (the control plane runs next to slurmctld or in its zone).

A run's name `<job_prefix>-<GOGH job id>` says it is GOGH's; any other name is a run GOGH did
not submit (job_id None). What the parser does not know (invalid JSON, a missing field, a
state word not in SLURM_STATES) is an ExecutorError naming it: the sync then writes nothing.
"""
import gc
import json
import re
import signal
from datetime import datetime

from ..base import (
    CANCELLED,
    ENDED,
    FAILED,
    NODE_FAIL,
    PENDING,
    PREEMPTED,
    RUNNING,
    SUCCEEDED,
    TIMEOUT,
    ExecutorError,
    NodeStatus,
    RunStatus,
)

#: Slurm's job states (squeue's job_state, sacct's State) in GOGH's words. A job Slurm put back
#: in its queue (REQUEUED, RESIZING) waits again; one still finishing (COMPLETING, STAGE_OUT,
#: SIGNALING) or stopped in place (SUSPENDED, STOPPED) still holds its GPUs.
SLURM_STATES = {
    "PENDING": PENDING,
    "CONFIGURING": PENDING,
    "POWER_UP_NODE": PENDING,
    "REQUEUED": PENDING,
    "REQUEUE_HOLD": PENDING,
    "REQUEUE_FED": PENDING,
    "RESIZING": PENDING,
    "RUNNING": RUNNING,
    "COMPLETING": RUNNING,
    "SIGNALING": RUNNING,
    "STAGE_OUT": RUNNING,
    "SUSPENDED": RUNNING,
    "STOPPED": RUNNING,
    "COMPLETED": SUCCEEDED,
    "FAILED": FAILED,
    "OUT_OF_MEMORY": FAILED,
    "DEADLINE": FAILED,
    "CANCELLED": CANCELLED,
    "TIMEOUT": TIMEOUT,
    "NODE_FAIL": NODE_FAIL,
    "BOOT_FAIL": NODE_FAIL,
    "PREEMPTED": PREEMPTED,
}

#: A node in one of these base states, or with one of these flags, runs no new jobs.
DOWN_STATES = frozenset({"down", "error", "future", "unknown"})
DOWN_FLAGS = frozenset({
    "DRAIN", "DRAINING", "DRAINED", "FAIL", "FAILING", "NOT_RESPONDING", "INVALID", "INVALID_REG",
    "MAINTENANCE", "MAINT", "REBOOT_ISSUED",
})

SINFO = "sinfo --json"
SQUEUE = "squeue --json"
SACCT = "sacct -c -P -n -o jobid,jobname,state,nodelist,start,end,exitcode"

# One gres of a node's list: "gpu:v100:4", "gpu:4", "shard:v100:8", "gpu:v100:4(S:0-1)".
_NODE_GRES = re.compile(r"(?P<name>[^:,()]+)(?::(?P<type>[^:,()]+))?:(?P<count>\d+)(?:\([^)]*\))?")
# One gres a job holds, with the indexes of the node's devices: "gpu:v100:2(IDX:0-1)",
# "shard:1(IDX:0)", "gpu:v100:3(IDX:0,2-3)", "gpu:0(IDX:N/A)".
_JOB_GRES = re.compile(r"(?P<name>[^:,()]+)(?::[^:,()]+)?:\d+\(IDX:(?P<indexes>[^)]*)\)")
_INDEXES = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")
_SACCT_TIME = "%Y-%m-%dT%H:%M:%S"


def parse_sinfo(text: str, *, partition: str = "", command: str = SINFO) -> list[NodeStatus]:
    """The nodes of `sinfo --json` (those of `partition` only, when one is given). A node's
    GPUs: its typed `gpu` gres by type (an untyped one under ""); shards_per_gpu: its `shard`
    count over its GPU count."""
    nodes = []
    for node in _items(text, "nodes", command):
        name = _field(node, "name", command)
        if partition and partition not in _field(node, "partitions", command, name):
            continue
        state = str(_field(node, "state", command, name)).lower()
        reason = _field(node, "reason", command, name)
        flags = _field(node, "state_flags", command, name)
        if not isinstance(flags, list):
            raise ExecutorError(command, f"node {name}: state_flags {flags!r} is not a list")
        flags = {str(flag).upper() for flag in flags}
        gpus, shards = _node_gres(_field(node, "gres", command, name), command, name)
        up = state not in DOWN_STATES and not flags & DOWN_FLAGS
        reason = "" if up else reason or "+".join([state, *sorted(flags)])
        total = sum(gpus.values())
        nodes.append(NodeStatus(name=name, up=up, gpus=gpus, reason=reason,
                                shards_per_gpu=shards // total if total else 0))
    return nodes


def parse_squeue(text: str, job_prefix: str, *, command: str = SQUEUE) -> list[RunStatus]:
    """Every job of `squeue --json`, running, waiting or recently ended."""
    job_name = _job_name(job_prefix)
    gres_cache: dict[str, tuple[tuple[int, ...], bool]] = {}
    runs = []
    for job in _items(text, "jobs", command):
        if not isinstance(job, dict):
            raise ExecutorError(command, f"a job that is not an object: {str(job)[:200]!r}")
        try:
            external_id = str(job["job_id"])
            native = job["job_state"]
            status = job["exit_code"]
            started, ended = job["start_time"], job["end_time"]
            details = job["gres_detail"]
            node = job["nodes"]
            name = job["name"]
            reason = job["state_reason"]
            user = job["user_name"]
        except KeyError as missing:
            raise ExecutorError(command, f"job {job.get('job_id', '?')}: no field {missing}") from None
        state = SLURM_STATES.get(native) if isinstance(native, str) else None
        if state is None:
            raise ExecutorError(command, f"job {external_id}: unknown job_state {native!r}")
        if not isinstance(details, list) or not all(isinstance(detail, str) for detail in details):
            raise ExecutorError(command, f"job {external_id}: gres_detail {details!r} is not a list of text")
        detail = ",".join(details)
        if detail not in gres_cache:
            gres_cache[detail] = _job_gres(detail, command, external_id)
        indexes, shared = gres_cache[detail]
        exit_code, killed_by = _wait_status(status, command, external_id) if state in ENDED else (None, "")
        reason = "" if reason == "None" else reason
        match = job_name.match(name)
        runs.append(RunStatus(
            external_id=external_id,
            job_id=int(match[1]) if match else None,
            state=state,
            node=node or None,
            gpu_indexes=indexes,
            shared=shared,
            exit_code=exit_code,
            reason=f"{reason}; {killed_by}" if reason and killed_by else reason or killed_by,
            native_state=native,
            user=user,
            started_at=_epoch(started, command, external_id) if state != PENDING else None,
            ended_at=_epoch(ended, command, external_id) if state in ENDED else None,
        ))
    return runs


def parse_sacct(text: str, job_prefix: str, *, command: str = SACCT) -> list[RunStatus]:
    """The ended jobs of `sacct -c -P -n -o jobid,jobname,state,nodelist,start,end,exitcode`.
    A job listed twice (its ids reused after slurmctld lost its state) is its last line."""
    job_name = _job_name(job_prefix)
    runs: dict[str, RunStatus] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("JobID|"):
            continue
        fields = line.split("|")
        if len(fields) != 7:
            raise ExecutorError(command, f"line {number}: {len(fields)} fields, not 7: {line[:200]!r}")
        external_id, name, state_field, node, start, end, exit_field = fields
        if "." in external_id:
            continue  # a step of a job (12.batch, 12.0): the job's own line says how it ended
        if not external_id.isdigit():
            raise ExecutorError(command, f"line {number}: job id {external_id!r} is not a number")
        native, _, by = state_field.partition(" ")
        state = SLURM_STATES.get(native)
        if state is None:
            raise ExecutorError(command, f"job {external_id}: unknown State {state_field!r}")
        status, colon, signum = exit_field.partition(":")
        if not (colon and status.isdigit() and signum.isdigit()):
            raise ExecutorError(command, f"job {external_id}: ExitCode {exit_field!r} is not <status>:<signal>")
        killed_by = _signal_text(int(signum)) if int(signum) else ""
        match = job_name.match(name)
        runs[external_id] = RunStatus(
            external_id=external_id,
            job_id=int(match[1]) if match else None,
            state=state,
            node=None if node in ("", "(null)", "None assigned") else node,
            exit_code=None if killed_by or state not in ENDED else int(status),
            reason="; ".join(part for part in (by, killed_by) if part),
            native_state=native,
            started_at=_sacct_time(start, command, external_id),
            ended_at=_sacct_time(end, command, external_id) if state in ENDED else None,
        )
    return list(runs.values())


def _items(text: str, key: str, command: str) -> list:
    try:
        document = _loads(text)
    except (ValueError, TypeError) as exc:
        raise ExecutorError(command, f"not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get(key), list):
        raise ExecutorError(command, f"no list {key!r} in its output")
    if document.get("errors"):
        raise ExecutorError(command, f"Slurm reported errors: {str(document['errors'])[:500]}")
    return document[key]


def _loads(text: str):
    """json.loads with the cyclic garbage collector paused: squeue's output for 2,000 jobs is
    about a million new objects, which set off full collections of the whole process (a
    worker's Django included) that cost three times the parse itself. JSON makes no cycles."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text)
    finally:
        if collecting:
            gc.enable()


def _field(item, key: str, command: str, name: str = ""):
    try:
        return item[key]
    except (KeyError, TypeError):
        raise ExecutorError(command, f"node {name or '?'}: no field {key!r}") from None


def _job_name(job_prefix: str) -> re.Pattern:
    return re.compile(rf"{re.escape(job_prefix)}-([0-9]+)\Z")


def _node_gres(gres: str, command: str, node: str) -> tuple[dict[str, int], int]:
    """({GPU type: count}, shards) of a node's gres list; gres other than gpu and shard are
    not GOGH's business."""
    gpus: dict[str, int] = {}
    shards = 0
    if not isinstance(gres, str):
        raise ExecutorError(command, f"node {node}: gres {gres!r} is not text")
    for item in _split_gres(gres):
        match = _NODE_GRES.fullmatch(item)
        if match is None:
            raise ExecutorError(command, f"node {node}: gres {item!r} is not name[:type]:count")
        if match["name"] == "gpu":
            gpu_type = match["type"] or ""
            gpus[gpu_type] = gpus.get(gpu_type, 0) + int(match["count"])
        elif match["name"] == "shard":
            shards += int(match["count"])
    return gpus, shards


def _split_gres(gres: str) -> list[str]:
    """A gres list split at its commas, not at those inside a socket list "(S:0,2)"."""
    items, depth, start = [], 0, 0
    for position, char in enumerate(gres):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(gres[start:position])
            start = position + 1
    items.append(gres[start:])
    return [item for item in items if item]


def _job_gres(detail: str, command: str, job: str) -> tuple[tuple[int, ...], bool]:
    """(the GPU indexes a job holds, whether it holds shards) from its gres_detail."""
    indexes: set[int] = set()
    shared = False
    for match in _JOB_GRES.finditer(detail):
        if match["name"] not in ("gpu", "shard"):
            continue
        shared = shared or match["name"] == "shard"
        text = match["indexes"]
        if text == "N/A":
            continue
        if not _INDEXES.fullmatch(text):
            raise ExecutorError(command, f"job {job}: gres_detail indexes {text!r} are not like 0,2-3")
        for part in text.split(","):
            low, _, high = part.partition("-")
            indexes.update(range(int(low), int(high or low) + 1))
    return tuple(sorted(indexes)), shared


def _wait_status(status, command: str, job: str) -> tuple[int | None, str]:
    """(exit status or None, what killed it) from a wait status: 768 is exit 3, 9 is SIGKILL."""
    if not isinstance(status, int) or status < 0:
        raise ExecutorError(command, f"job {job}: exit_code {status!r} is not a wait status")
    if status & 0x7F:
        return None, _signal_text(status & 0x7F)
    return status >> 8, ""


def _signal_text(number: int) -> str:
    try:
        return f"killed by signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"killed by signal {number}"


def _epoch(value, command: str, job: str) -> float | None:
    if not isinstance(value, int) or value < 0:
        raise ExecutorError(command, f"job {job}: time {value!r} is not epoch seconds")
    return float(value) if value else None


def _sacct_time(value: str, command: str, job: str) -> float | None:
    if value in ("", "Unknown", "None"):
        return None
    try:
        return datetime.strptime(value, _SACCT_TIME).timestamp()
    except ValueError:
        raise ExecutorError(command, f"job {job}: time {value!r} is not {_SACCT_TIME}") from None
