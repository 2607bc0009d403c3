"""What every GPU backend (NVML, simulated) provides: the devices, and samples of them.

The agent talks to the backend only through this interface, so the simulated backend runs the
very same agent code as real hardware does.
"""
import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Protocol


class NoGpuDriver(RuntimeError):
    """The backend cannot reach GPUs (no NVIDIA driver or NVML library); the message says why."""


class PowerLimitRefused(RuntimeError):
    """The GPU did not take the power limit (no permission, not supported, out of range...);
    the message says why, for the control plane and the operator."""


@dataclass(frozen=True)
class GpuInfo:
    """One device as the registration reports it (telemetry's GpuReportSerializer fields)."""

    index: int
    uuid: str
    product_name: str
    pci_bus_id: str = ""
    numa_node: int | None = None
    memory_gb: float | None = None
    gpu_type: str = ""  # only the simulated backend knows the type; NVML reports a product name
    # The power limits the board allows and its default, W, and the limit in force when read
    # (None: the device or driver cannot say, and no limit is ever set on it).
    power_limit_min_w: float | None = None
    power_limit_max_w: float | None = None
    power_limit_default_w: float | None = None
    power_limit_w: float | None = None

    @property
    def power_limit_range(self) -> tuple[float, float, float] | None:
        """(min, max, default) W, or None where the board does not report all three."""
        values = (self.power_limit_min_w, self.power_limit_max_w, self.power_limit_default_w)
        return None if None in values else values

    def report(self) -> dict:
        return {key: value for key, value in asdict(self).items() if value not in ("", None)}


#: GpuSample's health signals (docs/gpu_health.md): a control plane from before them refuses
#: them, and the agent then sends its samples without them.
HEALTH_FIELDS = ("throttle_reasons", "remapped_rows", "sm_clock_max_mhz", "xid_count", "xid_last")


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU. A metric the device does not support is None, never invented."""

    uuid: str
    ts: float  # seconds since the epoch
    power_w: float | None = None
    utilization: float | None = None  # 0..1
    memory_used_mb: float | None = None
    sm_clock_mhz: float | None = None
    temperature_c: float | None = None
    ecc_corrected: int | None = None
    ecc_uncorrected: int | None = None
    retired_pages: int | None = None
    # Health signals (docs/gpu_health.md): NVML's clocks event (throttle) reasons, a bit mask,
    # the rows remapped (correctable + uncorrectable) on boards that remap instead of retiring, and
    # the board's maximum SM clock (a braked board is planned at sm_clock_mhz over it).
    throttle_reasons: int | None = None
    remapped_rows: int | None = None
    sm_clock_max_mhz: float | None = None
    # Critical XID events (NVML's event set): how many since the agent started, and the last one's
    # code; None where NVML cannot register them for the device.
    xid_count: int | None = None
    xid_last: int | None = None

    def payload(self) -> dict:
        """The wire form of POST /api/telemetry/samples/: non-finite readings become null."""
        body = {"gpu": self.uuid, "ts": datetime.fromtimestamp(self.ts, tz=UTC).isoformat()}
        for key, value in asdict(self).items():
            if key in ("uuid", "ts"):
                continue
            body[key] = value if value is None or math.isfinite(value) else None
        return body


class GpuBackend(Protocol):
    name: str

    def open(self) -> None:
        """Connect to the GPUs; raises NoGpuDriver when there are none to reach."""

    def devices(self) -> list[GpuInfo]: ...

    def driver_version(self) -> str:
        """The GPU driver's version ("" when unknown); a change makes the control plane profile
        the node's GPU types again."""

    def sample(self, now: float) -> list[GpuSample]:
        """One reading of every device, stamped `now`."""

    def note_busy(self, indexes: set[int]) -> None:
        """The device indexes that run jobs now (real GPUs know it; the simulation needs it)."""

    def failures(self) -> dict[int, str]:
        """Devices that stopped working since open(), by index, with why. They are no longer
        sampled; the agent reports them and stops the jobs on them."""

    def power_limit(self, index: int) -> float | None:
        """The power limit in force on the device, W (None: it cannot say)."""

    def set_power_limit(self, index: int, watts: float) -> None:
        """Set the device's power limit; raises PowerLimitRefused with why when it does not take it."""

    def pace(self, indexes, planned_speed: float | None) -> float:
        """How fast a simulated job runs on these devices under their power limits (1: full
        speed), given the speed its round planned under them (`planned_speed`, None: none).
        Real GPUs slow their jobs themselves: 1."""

    def close(self) -> None: ...
