"""The simulated GPU backend: the NVML interface over made-up devices, for demos and tests.

Power follows the GPU type's power curve (the control plane's, piecewise linear in
utilization) with per-sample noise; a GPU running a job is busy (utilization about 0.9),
others idle. Pure Python and seeded, so a run can be repeated. UUIDs are uuid5 of host name
and index (`gpu_uuid`), the same on every start; the demo inventory (telemetry.demo_inventory)
registers its GPUs with them, so a simulated agent for a demo node reports the very GPUs
`load_demo_cluster` registered. GPUs fail when told to (`fail_after`), as a lost GPU does under
NVML: no more samples, and `failures()` names it.

Power limits: each simulated board allows MIN_LIMIT_FRACTION to 1 x its type's top power (the
default, as a datasheet TDP is), and a limit caps the power it reports. A simulated board has no
physics of its own for a limit: a job on boards held below their default runs at the speed its
round planned it at under that limit (the assignment's `power_limit_speed`, the control plane's
power-limit model for that workload; the agent hands it to the simulated job, simjob
--pace-file), so a demo's or a test's measurements taken at a limit agree with the model that
reads them back (scheduler/dispatch/at_default_limit.py). How far the model is from real boards
is measured against Zeus (docs/power_limits.md) and exercised by `simulate`, whose truth deviates.
`refuse_limits` makes setting one fail as NVML does without root, to show refusals end to end.
"""
import random
import time
import uuid
from dataclasses import dataclass

from .gpus import GpuInfo, GpuSample, PowerLimitRefused

BUSY_UTILIZATION = 0.9
#: The lowest limit a simulated board allows, as a fraction of its default (real boards: about
#: 0.33 (V100) to 0.5 (P100) of their TDP).
MIN_LIMIT_FRACTION = 0.4
#: Why a simulated GPU refuses every limit under --refuse-power-limits (NVML's words without root).
NO_PERMISSION = "Insufficient Permissions (simulated: setting a power limit needs root)"
#: What a simulated node reports as its GPU driver: fixed, so it never looks like a change.
SIMULATED_DRIVER = "simulated"
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "demo.gogh.invalid")


def gpu_uuid(hostname: str, index: int) -> str:
    """The UUID of simulated GPU `index` of `hostname`: the same on every start, so a restarted
    agent reports the GPUs it registered before."""
    return f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{hostname}/{index}')}"


@dataclass(frozen=True)
class SimulatedType:
    """What the simulation needs of a GPU type (from GET /api/gpu-types/)."""

    name: str
    memory_gb: float
    power_curve: tuple[tuple[float, float], ...]  # (utilization, watts), increasing utilization
    clock_mhz: float = 1380.0

    def power_at(self, utilization: float) -> float:
        points = self.power_curve
        if utilization <= points[0][0]:
            return points[0][1]
        for (u0, w0), (u1, w1) in zip(points, points[1:]):
            if utilization <= u1:
                return w0 + (w1 - w0) * (utilization - u0) / (u1 - u0)
        return points[-1][1]


def parse_failures(specs: list[str]) -> dict[int, float]:
    """['2@30', '0@90.5'] -> {2: 30.0, 0: 90.5}; ValueError with the culprit otherwise."""
    failures = {}
    for spec in specs:
        index, at, seconds = spec.partition("@")
        try:
            failures[int(index)] = float(seconds)
        except ValueError:
            raise ValueError(f"--fail-gpu {spec!r}: expected INDEX@SECONDS, e.g. 2@30") from None
        if not at or failures[int(index)] < 0 or int(index) < 0:
            raise ValueError(f"--fail-gpu {spec!r}: expected INDEX@SECONDS with both >= 0, e.g. 2@30")
    return failures


def parse_gpu_spec(spec: str) -> list[tuple[str, int]]:
    """'v100:4,k80:8' -> [('v100', 4), ('k80', 8)]; ValueError with the culprit otherwise."""
    parsed = []
    for part in filter(None, (piece.strip() for piece in spec.split(","))):
        name, _, count = part.partition(":")
        if not name or not count.isdigit() or int(count) < 1:
            raise ValueError(f"{part!r} is not <gpu type>:<count>, e.g. v100:4")
        parsed.append((name.strip().lower(), int(count)))
    if not parsed:
        raise ValueError("no GPUs given; e.g. --gpus v100:4,k80:8")
    return parsed


class SimulatedBackend:
    name = "simulated"

    def __init__(self, *, hostname: str, layout: list[tuple[str, int]], types: dict[str, SimulatedType],
                 seed: int = 0, noise: float = 0.03, fail_after: dict[int, float] | None = None,
                 clock=time.monotonic, refuse_limits: str = ""):
        unknown = sorted({name for name, _ in layout} - set(types))
        if unknown:
            raise ValueError(f"unknown GPU type(s) {', '.join(unknown)}; known: {', '.join(sorted(types))}")
        self._hostname, self._layout, self._types = hostname, layout, types
        self._rng = random.Random(seed)
        self._noise = noise
        self._busy: set[int] = set()
        self._devices: list[tuple[GpuInfo, SimulatedType]] = []
        self._fail_after = dict(fail_after or {})  # device index -> seconds after open()
        self._clock = clock
        self._opened_at = 0.0
        self._limits: dict[int, float] = {}  # device index -> limit in force, W
        self._refuse_limits = refuse_limits  # why every set is refused ("": none is)

    def open(self) -> None:
        self._opened_at = self._clock()
        index = 0
        for type_name, count in self._layout:
            gpu_type = self._types[type_name]
            default = round(gpu_type.power_at(1.0), 1)
            for _ in range(count):
                self._limits[index] = default
                info = GpuInfo(
                    index=index,
                    uuid=gpu_uuid(self._hostname, index),  # a demo node's own GPUs, same rows
                    product_name=f"GOGH simulated {type_name.upper()}",
                    pci_bus_id=f"00000000:{index + 4:02x}:00.0",
                    numa_node=0,
                    memory_gb=gpu_type.memory_gb,
                    gpu_type=type_name,
                    power_limit_min_w=round(default * MIN_LIMIT_FRACTION, 1),
                    power_limit_max_w=default,
                    power_limit_default_w=default,
                    power_limit_w=default,
                )
                self._devices.append((info, gpu_type))
                index += 1

    def devices(self) -> list[GpuInfo]:
        return [info for info, _ in self._devices]

    def driver_version(self) -> str:
        return SIMULATED_DRIVER

    def note_busy(self, indexes: set[int]) -> None:
        self._busy = set(indexes)

    def power_limit(self, index: int) -> float | None:
        return self._limits.get(index)

    def pace(self, indexes, planned_speed: float | None) -> float:
        """The pace of a job on these GPUs (1: full speed): the speed planned under their limits
        where any of them is held below its default (a refused limit left it at the default: full
        speed), 1 where none is or nothing was planned."""
        held = any(self._limits[index] < self._devices[index][0].power_limit_default_w for index in indexes)
        return planned_speed if held and planned_speed is not None else 1.0

    def set_power_limit(self, index: int, watts: float) -> None:
        info = self._devices[index][0]
        if self._refuse_limits:
            raise PowerLimitRefused(self._refuse_limits)
        if not info.power_limit_min_w <= watts <= info.power_limit_max_w:
            raise PowerLimitRefused(f"{watts:g} W is outside the range this GPU allows "
                                    f"({info.power_limit_min_w:g}-{info.power_limit_max_w:g} W)")
        self._limits[index] = watts

    def failures(self) -> dict[int, str]:
        """The devices told to fail (--fail-gpu INDEX@SECONDS) whose time has come."""
        elapsed = self._clock() - self._opened_at
        return {
            index: f"simulated failure {after:g} s after start"
            for index, after in self._fail_after.items()
            if elapsed >= after and index < len(self._devices)
        }

    def sample(self, now: float) -> list[GpuSample]:
        samples = []
        failed = self.failures()
        for info, gpu_type in self._devices:
            if info.index in failed:
                continue  # a dead GPU answers nothing
            busy = info.index in self._busy
            util = min(1.0, max(0.0, self._rng.gauss(BUSY_UTILIZATION, self._noise))) if busy else 0.0
            power = gpu_type.power_at(util) * max(0.0, 1 + self._rng.gauss(0, self._noise))
            power = min(power, self._limits[info.index])  # the board holds its draw under the limit
            samples.append(
                GpuSample(
                    uuid=info.uuid,
                    ts=now,
                    power_w=round(power, 2),
                    utilization=round(util, 3),
                    memory_used_mb=round(gpu_type.memory_gb * 1024 * (0.6 if busy else 0.0), 1),
                    sm_clock_mhz=gpu_type.clock_mhz if busy else 300.0,
                    sm_clock_max_mhz=gpu_type.clock_mhz,
                    temperature_c=round(35 + 45 * util + self._rng.gauss(0, 0.5), 1),
                    ecc_corrected=0,
                    ecc_uncorrected=0,
                    retired_pages=0,
                )
            )
        return samples

    def close(self) -> None:
        """Nothing to release."""
