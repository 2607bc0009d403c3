"""Mean power and utilization of a job's GPUs over its timed window, from NVML.

Reads through the agent's NVML backend (telemetry.agent.nvml, the code that samples GPUs in
production; it imports no Django), so a test fakes NVML at the same edge as the agent's tests
do. A thread samples every `interval_s`; power is the sum over the job's GPUs of each GPU's
mean (the CSV's power_w is the job's), utilization the mean over GPUs and samples. Where NVML
or a reading is missing, the value is None: power is then unknown, not zero.
"""
import threading
import time

from telemetry.agent.gpus import NoGpuDriver
from telemetry.agent.nvml import NvmlBackend


class PowerSampler:
    def __init__(self, uuids: list[str], *, interval_s: float = 0.1, nvml=None):
        self._uuids = set(uuids)
        self._interval_s = interval_s
        self._nvml = nvml
        self._backend: NvmlBackend | None = None
        self._power: dict[str, list[float]] = {}
        self._utilization: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            backend = NvmlBackend(nvml=self._nvml)
            backend.open()
            backend.devices()
        except (NoGpuDriver, ImportError):
            return
        self._backend = backend
        self._thread = threading.Thread(target=self._run, name="gogh-suite-power", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self.sample_once()
            if self._stop.wait(self._interval_s):
                return

    def sample_once(self) -> None:
        for sample in self._backend.sample(time.time()):
            if sample.uuid not in self._uuids:
                continue
            if sample.power_w is not None:
                self._power.setdefault(sample.uuid, []).append(sample.power_w)
            if sample.utilization is not None:
                self._utilization.append(sample.utilization)

    def stop(self) -> tuple[float | None, float | None]:
        """(power W, utilization 0..1) over the samples taken, None where none was."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.sample_once()  # a window shorter than the interval still gets its end's reading
            self._backend.close()
        power = sum(sum(v) / len(v) for v in self._power.values()) if self._power else None
        utilization = sum(self._utilization) / len(self._utilization) if self._utilization else None
        return power, utilization


def cuda_uuids(indexes) -> list[str]:
    """NVML's names ("GPU-<uuid>") of the given torch CUDA devices, which CUDA_VISIBLE_DEVICES
    and CUDA's device order may number differently from NVML; torch reports each device's
    UUID. A build that does not leaves the list empty: power is then unknown."""
    import torch

    names = []
    for index in indexes:
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        if uuid is None:
            return []
        text = str(uuid)
        names.append(text if text.startswith("GPU-") else f"GPU-{text}")
    return names
