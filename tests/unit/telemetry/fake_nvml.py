"""A fake `pynvml` for the NVML backend: the real module's constants, NVMLError class and
function names (a test checks the names against nvidia-ml-py), over made-up devices."""
import types

import pynvml


def fake_nvml(*, count=2, name="Tesla V100-SXM2-16GB", unsupported=(), init_error=None, power_mw=150_000,
              limit_range_mw=(100_000, 300_000)):
    """A module object. `unsupported`: function names that raise NVMLError_NotSupported;
    `init_error`: an NVML error code nvmlInit raises (e.g. NVML_ERROR_DRIVER_NOT_LOADED).
    Add a device index to `fake.lost` and every query of it raises NVMLError_GpuIsLost, as a
    GPU that fell off the bus does.
    Power limits: every device allows `limit_range_mw` and defaults to its top; `fake.limits_mw`
    holds each device's limit in force; `fake.refuse[index] = code` makes setting a limit on it
    raise that NVML error (e.g. NVML_ERROR_NO_PERMISSION, as without root); a limit outside the
    range raises NVML_ERROR_INVALID_ARGUMENT, as NVML does.
    XID errors: `fake.xids[index]` is the list of XID codes the device's critical-XID events will
    deliver, oldest first; nvmlEventSetWait hands them out one per call and raises
    NVML_ERROR_TIMEOUT when none is left, as NVML does with a timeout of 0. `fake.event_sets`
    maps each live event set to the device registered in it (freed sets leave)."""
    fake = types.ModuleType("fake_pynvml")
    for constant in dir(pynvml):
        if constant.startswith("NVML_"):
            setattr(fake, constant, getattr(pynvml, constant))
    fake.NVMLError = pynvml.NVMLError
    fake.nvmlEventTypeXidCriticalError = pynvml.nvmlEventTypeXidCriticalError
    fake.calls = []
    fake.lost = set()
    fake.limits_mw = dict.fromkeys(range(count), limit_range_mw[1])
    fake.refuse = {}
    fake.xids = {index: [] for index in range(count)}
    fake.event_sets = {}
    made = []

    def nvml(function):
        def call(*args):
            fake.calls.append(function.__name__)
            if function.__name__ in unsupported:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
            if args and isinstance(args[0], tuple) and args[0][1] in fake.lost:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            return function(*args)

        call.__name__ = function.__name__
        setattr(fake, function.__name__, call)
        return call

    @nvml
    def nvmlInit():
        if init_error is not None:
            raise pynvml.NVMLError(init_error)

    @nvml
    def nvmlShutdown():
        pass

    @nvml
    def nvmlSystemGetDriverVersion():
        return "580.159.04"

    @nvml
    def nvmlDeviceGetCount():
        return count

    @nvml
    def nvmlDeviceGetHandleByIndex(index):
        return ("handle", index)

    @nvml
    def nvmlDeviceGetName(handle):
        return name

    @nvml
    def nvmlDeviceGetUUID(handle):
        return f"GPU-fake-{handle[1]}"

    @nvml
    def nvmlDeviceGetPciInfo(handle):
        return types.SimpleNamespace(busId=f"00000000:{handle[1] + 4:02X}:00.0")

    @nvml
    def nvmlDeviceGetNumaNodeId(handle):
        return handle[1] // 2

    @nvml
    def nvmlDeviceGetMemoryInfo(handle):
        return types.SimpleNamespace(total=16 * 1024**3, used=(handle[1] + 1) * 1024**3, free=0)

    @nvml
    def nvmlDeviceGetPowerUsage(handle):
        return power_mw + handle[1] * 1000

    @nvml
    def nvmlDeviceGetUtilizationRates(handle):
        return types.SimpleNamespace(gpu=50 + handle[1], memory=10)

    @nvml
    def nvmlDeviceGetClockInfo(handle, clock_type):
        assert clock_type == pynvml.NVML_CLOCK_SM
        return 1380

    @nvml
    def nvmlDeviceGetMaxClockInfo(handle, clock_type):
        assert clock_type == pynvml.NVML_CLOCK_SM
        return 1530

    @nvml
    def nvmlDeviceGetTemperature(handle, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return 61

    @nvml
    def nvmlDeviceGetTotalEccErrors(handle, error_type, counter_type):
        assert counter_type == pynvml.NVML_AGGREGATE_ECC
        return 3 if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else 0

    @nvml
    def nvmlDeviceGetRetiredPages(handle, cause):
        return [0x1000] if cause == pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR else []

    @nvml
    def nvmlDeviceGetPowerManagementLimitConstraints(handle):
        return list(limit_range_mw)

    @nvml
    def nvmlDeviceGetPowerManagementDefaultLimit(handle):
        return limit_range_mw[1]

    @nvml
    def nvmlDeviceGetEnforcedPowerLimit(handle):
        return fake.limits_mw[handle[1]]

    @nvml
    def nvmlDeviceSetPowerManagementLimit(handle, limit_mw):
        if handle[1] in fake.refuse:
            raise pynvml.NVMLError(fake.refuse[handle[1]])
        if not limit_range_mw[0] <= limit_mw <= limit_range_mw[1]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        fake.limits_mw[handle[1]] = limit_mw

    @nvml
    def nvmlDeviceGetCurrentClocksEventReasons(handle):
        return pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonHwThermalSlowdown

    @nvml
    def nvmlDeviceGetRemappedRows(handle):
        return (2, 1, False, False)

    @nvml
    def nvmlEventSetCreate():
        made.append(len(made))
        events = ("event set", 1000 + made[-1])  # never a device index (fake.lost)
        fake.event_sets[events] = None
        return events

    @nvml
    def nvmlDeviceRegisterEvents(handle, event_types, events):
        assert event_types == pynvml.nvmlEventTypeXidCriticalError and events in fake.event_sets
        fake.event_sets[events] = handle[1]

    @nvml
    def nvmlEventSetWait(events, timeout_ms):
        assert timeout_ms == 0
        pending = fake.xids[fake.event_sets[events]]
        if not pending:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        return types.SimpleNamespace(device=("handle", fake.event_sets[events]),
                                     eventType=pynvml.nvmlEventTypeXidCriticalError, eventData=pending.pop(0))

    @nvml
    def nvmlEventSetFree(events):
        del fake.event_sets[events]

    return fake


FAKED_FUNCTIONS = [
    "nvmlInit", "nvmlShutdown", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetName",
    "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo", "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPowerUsage", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetTemperature", "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetPowerManagementLimitConstraints", "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceSetPowerManagementLimit",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetRemappedRows",
    "nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetWait", "nvmlEventSetFree",
]
