"""Power limits on this node's GPUs: apply the ones assigned, report what is in force and every
refusal, and put the default back.

The control plane chooses a limit for each allocated GPU (None: the board's default). Applying
is all or nothing per group: the jobs that share a GPU (co-located) and the GPUs of each of them
(a multi-GPU job) form a group, because a GPU has one limit and a job runs at the pace of its
slowest GPU. Jobs that share a GPU but were assigned different limits are a control-plane bug:
the whole group is refused and reported. When one GPU of a group refuses, the GPUs already set
are put back to what they had, and every GPU of the group reports the refusal. A limit outside
the range the board reports is refused before NVML is asked.

A limit asked for and refused is not asked for again until it changes (a GPU without root
refuses every time); a GPU that goes idle forgets it. Only GPUs this agent changed get their
default back: on idle, and when the agent stops. A refusal's reason stays reported until a
limit is applied on that GPU.
"""
import logging
import threading
from collections.abc import Iterable

from .gpus import GpuBackend, GpuInfo, PowerLimitRefused
from .jobs import Assignment

log = logging.getLogger("gogh.agent")
#: The control plane's column for a refusal's reason.
REASON_LENGTH = 300


class PowerLimiter:
    def __init__(self, backend: GpuBackend):
        self._backend = backend
        self._devices: dict[int, GpuInfo] = {}
        self._changed: set[int] = set()  # GPUs this agent moved off their default
        self._asked: dict[int, float | None] = {}  # the limit last asked for, applied or refused
        self._errors: dict[int, str] = {}
        self._lock = threading.Lock()  # report() runs in the heartbeat thread

    def open(self, devices: Iterable[GpuInfo]) -> None:
        self._devices = {device.index: device for device in devices}

    def follow(self, assignments: Iterable[Assignment], failed: Iterable[int] = ()) -> None:
        """Apply each assigned GPU's limit; put the default back on GPUs no job is assigned."""
        assignments, failed = list(assignments), set(failed)
        assigned = set()
        for group in _groups(assignments):
            gpus = {index for assignment in group for index in assignment.gpu_indexes}
            assigned |= gpus
            if not gpus & failed:
                self._apply_group(group, gpus)
        for index in sorted(set(self._devices) - assigned - failed):
            self._asked.pop(index, None)
            if index in self._changed:
                self._apply({index: None})

    def restore_all(self) -> None:
        """The default on every GPU this agent changed (the agent stops)."""
        for index in sorted(self._changed):
            self._apply({index: None})

    def report(self) -> list[dict]:
        """Each GPU's limit in force and why the last one asked for was refused ("": applied)."""
        with self._lock:
            errors = dict(self._errors)
        return [
            {"uuid": device.uuid, "power_limit_w": self._backend.power_limit(index),
             "power_limit_error": errors.get(index, "")}
            for index, device in sorted(self._devices.items())
        ]

    def _apply_group(self, group: list[Assignment], gpus: set[int]) -> None:
        wanted: dict[int, set] = {}
        for assignment in group:
            for index, limit in assignment.limits_by_gpu.items():
                wanted.setdefault(index, set()).add(limit)
        clashes = {index: limits for index, limits in wanted.items() if len(limits) > 1}
        if clashes:
            index, limits = min(clashes.items())
            jobs = ", ".join(str(a.job_id) for a in group if index in a.gpu_indexes)
            self._refuse(gpus, f"jobs {jobs} share GPU {index} but were assigned different power limits "
                               f"({', '.join(_shown(limit) for limit in sorted(limits, key=_order))}): "
                               "one GPU has one limit")
            return
        targets = {index: limits.pop() for index, limits in wanted.items()}
        if all(index in self._asked and self._asked[index] == target for index, target in targets.items()):
            return  # applied or refused already: not asked again until it changes
        self._asked.update(targets)
        self._apply(targets)

    def _apply(self, targets: dict[int, float | None]) -> None:
        """Set every target (None: the default) or none of them."""
        settings = {}
        for index, target in sorted(targets.items()):
            if target is None and index not in self._changed:
                continue  # at its default already, as far as this agent knows: left alone
            limits = self._devices[index].power_limit_range
            if limits is None:
                return self._refuse(targets, f"GPU {index} reports no power-limit range: setting one is not supported")
            low, high, default = limits
            watts = default if target is None else target
            if not low <= watts <= high:
                return self._refuse(targets, f"{watts:g} W is outside GPU {index}'s range ({low:g}-{high:g} W)")
            settings[index] = watts
        done: dict[int, float | None] = {}
        for index, watts in settings.items():
            before = self._backend.power_limit(index)
            try:
                self._backend.set_power_limit(index, watts)
            except PowerLimitRefused as exc:
                self._put_back(done)
                return self._refuse(targets, f"GPU {index}: {exc}")
            done[index] = before
        with self._lock:
            for index in targets:
                self._errors.pop(index, None)
        for index, watts in settings.items():
            if watts == self._devices[index].power_limit_default_w:
                self._changed.discard(index)
            else:
                self._changed.add(index)
        if settings:
            log.info("power limits set: %s", ", ".join(f"GPU {i} {w:g} W" for i, w in settings.items()))

    def _put_back(self, done: dict[int, float | None]) -> None:
        """The GPUs of a refused group that were already set get back what they had."""
        for index, before in done.items():
            watts = before if before is not None else self._devices[index].power_limit_default_w
            try:
                self._backend.set_power_limit(index, watts)
            except PowerLimitRefused as exc:
                self._changed.add(index)  # still off its default: put back when the agent stops
                log.error("GPU %s: could not put back its power limit of %g W: %s", index, watts, exc)

    def _refuse(self, gpus: Iterable[int], reason: str) -> None:
        reason = reason[:REASON_LENGTH]
        with self._lock:
            new = any(self._errors.get(index) != reason for index in gpus)
            for index in gpus:
                self._errors[index] = reason
        if new:
            log.warning("power limit refused on GPUs %s: %s", sorted(gpus), reason)


def _groups(assignments: list[Assignment]) -> list[list[Assignment]]:
    """The assignments linked by a shared GPU, directly or through others."""
    groups: list[tuple[set[int], list[Assignment]]] = []
    for assignment in assignments:
        gpus, members = set(assignment.gpu_indexes), [assignment]
        for group in [g for g in groups if g[0] & gpus]:
            groups.remove(group)
            gpus |= group[0]
            members = group[1] + members
        groups.append((gpus, members))
    return [members for _, members in groups]


def _order(limit: float | None) -> float:
    return float("inf") if limit is None else limit


def _shown(limit: float | None) -> str:
    return "the default" if limit is None else f"{limit:g} W"
