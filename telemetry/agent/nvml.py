"""The NVML backend: real GPUs through nvidia-ml-py (imported as `pynvml`).

The module is injected (`NvmlBackend(nvml=...)`), so tests run this very code against a fake
with the real module's function names and NVMLError semantics. Every reading a GPU may not
support (power on some boards, ECC on consumer cards, retired pages on A100 and later, which
remap rows instead; remapped rows and clock throttle reasons on older ones) is guarded: an
NVMLError there yields None for that metric, not a crash.

Power limits: NVML reports each board's allowed range and default
(nvmlDeviceGetPowerManagementLimitConstraints, nvmlDeviceGetPowerManagementDefaultLimit) and
the limit in force (nvmlDeviceGetEnforcedPowerLimit), all in mW; setting one
(nvmlDeviceSetPowerManagementLimit) needs root. Every refusal becomes PowerLimitRefused with a
reason a person can act on.

XID errors: NVML reports them only as events. Each device gets its own event set
(nvmlEventSetCreate, nvmlDeviceRegisterEvents with nvmlEventTypeXidCriticalError), so an event
needs no matching of handles; every sample drains it without waiting (nvmlEventSetWait with a
timeout of 0; NVML_ERROR_TIMEOUT: none left) and reports the XID events counted since the agent
started and the last one's code. A device, driver or binding that cannot register XID events
reports both as None (unknown), never 0.
"""
from pathlib import Path

from .gpus import GpuInfo, GpuSample, NoGpuDriver, PowerLimitRefused

_MIB = 1024 * 1024
#: At most this many XID events are drained from one device per sample (the rest wait for the next).
_MAX_XIDS_PER_SAMPLE = 64
_GIB = 1024 * 1024 * 1024


def _watts(milliwatts) -> float | None:
    return milliwatts / 1000 if milliwatts is not None else None


def _text(value) -> str:
    """nvidia-ml-py returns str in current releases and bytes in older ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlBackend:
    name = "nvml"

    def __init__(self, nvml=None, sysfs: Path = Path("/sys/bus/pci/devices")):
        if nvml is None:
            import pynvml as nvml  # importing never needs the driver; nvmlInit does
        self._nvml = nvml
        self._sysfs = sysfs
        self._handles: list[tuple[str, object]] = []
        self._failed: dict[int, str] = {}
        self._xid_sets: dict[int, object] = {}  # device index -> its XID event set, where it registered
        self._xids: dict[int, tuple[int, int | None]] = {}  # device index -> (XID events since open, last code)

    def open(self) -> None:
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise NoGpuDriver(
                f"NVML is not available ({exc}): no NVIDIA driver on this machine? "
                "Run with --simulate for simulated GPUs."
            ) from exc

    def devices(self) -> list[GpuInfo]:
        nvml = self._nvml
        found, self._handles = [], []
        self._free_xid_sets()  # listed again: each device registers anew, its count goes on
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = _text(nvml.nvmlDeviceGetUUID(handle))
            bus_id = self._optional(lambda h=handle: _text(nvml.nvmlDeviceGetPciInfo(h).busId))
            memory = self._optional(lambda h=handle: nvml.nvmlDeviceGetMemoryInfo(h).total)
            low, high = self._optional(lambda h=handle: nvml.nvmlDeviceGetPowerManagementLimitConstraints(h)) or (
                None, None)
            default = self._optional(lambda h=handle: nvml.nvmlDeviceGetPowerManagementDefaultLimit(h))
            found.append(
                GpuInfo(
                    index=index,
                    uuid=uuid,
                    product_name=_text(nvml.nvmlDeviceGetName(handle)),
                    pci_bus_id=bus_id or "",
                    numa_node=self._numa_node(handle, bus_id),
                    memory_gb=round(memory / _GIB, 2) if memory else None,
                    power_limit_min_w=_watts(low),
                    power_limit_max_w=_watts(high),
                    power_limit_default_w=_watts(default),
                    power_limit_w=_watts(self._optional(lambda h=handle: nvml.nvmlDeviceGetEnforcedPowerLimit(h))),
                )
            )
            self._handles.append((uuid, handle))
            self._watch_xids(index, handle)
        return found

    def _watch_xids(self, index: int, handle) -> None:
        """Register the device's critical XID events in an event set of its own; nothing where
        NVML cannot (its XIDs are then reported as unknown)."""
        nvml = self._nvml
        events = self._optional(nvml.nvmlEventSetCreate)
        if events is None:
            return
        registered = self._optional(
            lambda: nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events) or True
        )
        if registered is None:
            self._optional(lambda: nvml.nvmlEventSetFree(events))
            return
        self._xid_sets[index] = events
        self._xids.setdefault(index, (0, None))

    def _drain_xids(self, index: int) -> tuple[int | None, int | None]:
        """(XID events since open, the last one's code) after taking what the device's set holds
        now, without waiting; (None, None) where its XIDs cannot be read."""
        events = self._xid_sets.get(index)
        if events is None:
            return None, None
        count, last = self._xids[index]
        for _ in range(_MAX_XIDS_PER_SAMPLE):
            try:
                data = self._nvml.nvmlEventSetWait(events, 0)
            except self._nvml.NVMLError:  # NVML_ERROR_TIMEOUT: none left (any other error: try again next sample)
                break
            count, last = count + 1, int(data.eventData)
        self._xids[index] = (count, last)
        return count, last

    def power_limit(self, index: int) -> float | None:
        if index in self._failed:
            return None
        handle = self._handles[index][1]
        return _watts(self._optional(lambda: self._nvml.nvmlDeviceGetEnforcedPowerLimit(handle)))

    def pace(self, indexes, planned_speed: float | None) -> float:
        """A real job slows under a limit by itself."""
        return 1.0

    def set_power_limit(self, index: int, watts: float) -> None:
        nvml = self._nvml
        try:
            nvml.nvmlDeviceSetPowerManagementLimit(self._handles[index][1], int(round(watts * 1000)))
        except nvml.NVMLError as exc:
            raise PowerLimitRefused(self._refusal(exc, watts)) from exc
        except AttributeError as exc:
            raise PowerLimitRefused("this nvidia-ml-py cannot set power limits (too old)") from exc

    def _refusal(self, exc, watts: float) -> str:
        code = getattr(exc, "value", None)
        nvml = self._nvml
        if code == nvml.NVML_ERROR_NO_PERMISSION:
            return f"NVML refused {watts:g} W: no permission (setting a power limit needs root) ({exc})"
        if code == nvml.NVML_ERROR_NOT_SUPPORTED:
            return f"NVML refused {watts:g} W: this GPU does not support setting its power limit ({exc})"
        if code == nvml.NVML_ERROR_INVALID_ARGUMENT:
            return f"NVML refused {watts:g} W: outside the range this GPU allows ({exc})"
        return f"NVML refused {watts:g} W: {exc}"

    def driver_version(self) -> str:
        """nvmlSystemGetDriverVersion, e.g. "580.159.04" ("" where NVML cannot say)."""
        version = self._optional(self._nvml.nvmlSystemGetDriverVersion)
        return _text(version) if version is not None else ""

    def sample(self, now: float) -> list[GpuSample]:
        nvml, read = self._nvml, self._optional
        samples = []
        for index, (uuid, h) in enumerate(self._handles):
            if index in self._failed or self._lost(index, h):
                continue
            power_mw = read(lambda: nvml.nvmlDeviceGetPowerUsage(h))
            util = read(lambda: nvml.nvmlDeviceGetUtilizationRates(h).gpu)
            used = read(lambda: nvml.nvmlDeviceGetMemoryInfo(h).used)
            xid_count, xid_last = self._drain_xids(index)
            samples.append(
                GpuSample(
                    uuid=uuid,
                    ts=now,
                    power_w=power_mw / 1000 if power_mw is not None else None,
                    utilization=util / 100 if util is not None else None,
                    memory_used_mb=used / _MIB if used is not None else None,
                    sm_clock_mhz=read(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                    sm_clock_max_mhz=read(lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM)),
                    temperature_c=read(lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
                    ecc_corrected=read(lambda: self._ecc(h, nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED)),
                    ecc_uncorrected=read(lambda: self._ecc(h, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)),
                    retired_pages=read(lambda: self._retired_pages(h)),
                    throttle_reasons=read(lambda: self._throttle_reasons(h)),
                    remapped_rows=read(lambda: self._remapped_rows(h)),
                    xid_count=xid_count,
                    xid_last=xid_last,
                )
            )
        return samples

    def note_busy(self, indexes: set[int]) -> None:
        """Real GPUs report their own load."""

    def failures(self) -> dict[int, str]:
        return dict(self._failed)

    def _lost(self, index: int, handle) -> bool:
        """NVML answers NVML_ERROR_GPU_IS_LOST for a device that fell off the bus (Xid 79) or
        otherwise died; it stays lost until the node is serviced."""
        try:
            self._nvml.nvmlDeviceGetTemperature(handle, self._nvml.NVML_TEMPERATURE_GPU)
        except self._nvml.NVMLError as exc:
            if getattr(exc, "value", None) == self._nvml.NVML_ERROR_GPU_IS_LOST:
                self._failed[index] = f"NVML: GPU is lost ({exc})"
                return True
        return False

    def close(self) -> None:
        self._free_xid_sets()
        self._optional(self._nvml.nvmlShutdown)

    def _free_xid_sets(self) -> None:
        for events in self._xid_sets.values():
            self._optional(lambda e=events: self._nvml.nvmlEventSetFree(e))
        self._xid_sets = {}

    def _ecc(self, handle, error_type) -> int:
        """Lifetime (aggregate) ECC errors: what hardware-ageing analysis needs, unlike the
        volatile counter that a driver reload resets."""
        return self._nvml.nvmlDeviceGetTotalEccErrors(handle, error_type, self._nvml.NVML_AGGREGATE_ECC)

    def _retired_pages(self, handle) -> int:
        nvml = self._nvml
        causes = (
            nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
        )
        return sum(len(nvml.nvmlDeviceGetRetiredPages(handle, cause)) for cause in causes)

    def _throttle_reasons(self, handle) -> int:
        """Why the clocks are held back now, a bit mask (docs/gpu_health.md); nvidia-ml-py 12.535+
        names it 'clocks event reasons', older ones 'throttle reasons'."""
        nvml = self._nvml
        read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        return int((read or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)(handle))

    def _remapped_rows(self, handle) -> int:
        """Rows remapped for correctable and uncorrectable errors (A100 and later; NotSupported before)."""
        corrected, uncorrected, _pending, _failed = self._nvml.nvmlDeviceGetRemappedRows(handle)
        return corrected + uncorrected

    def _numa_node(self, handle, bus_id: str | None) -> int | None:
        """NVML knows the NUMA node on recent drivers; otherwise Linux does, in sysfs (-1: none)."""
        node = self._optional(lambda: self._nvml.nvmlDeviceGetNumaNodeId(handle))
        if node is None and bus_id:
            # NVML's bus id has an 8-digit domain (00000000:04:00.0); sysfs uses 4 (0000:04:00.0).
            path = self._sysfs / bus_id.lower()[-12:] / "numa_node"
            try:
                node = int(path.read_text().strip())
            except (OSError, ValueError):
                return None
        return node if node is not None and node >= 0 else None

    def _optional(self, read):
        """read(), or None where the device, driver or binding does not support it."""
        try:
            return read()
        except self._nvml.NVMLError:
            return None
        except AttributeError:  # an nvidia-ml-py too old to know the function
            return None
