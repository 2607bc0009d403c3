"""What runs inside a case's processes: build the case's model, run the timing rule, read
peak memory and power. One process runs a case alone; a pair runs two of these on one GPU,
started together; a data-parallel case runs one per GPU, as ranks of a process group.

Failures come back as data, never as an exception: `failure(exc)` tells an out-of-memory
error (a fact about memory: the configuration does not fit) from any other.
"""
import os
import time
from dataclasses import dataclass

import torch

from . import models
from .cases import Case
from .measure import GPU_TIMING, TINY_TIMING, measure
from .power import PowerSampler, cuda_uuids

_GIB = 2**30


@dataclass(frozen=True, slots=True)
class Options:
    device: str  # "cuda" or "cpu"
    tiny: bool = False


def is_oom(exc: BaseException) -> bool:
    """CUDA's allocator raises OutOfMemoryError; cuDNN, cuBLAS and NCCL report the same
    condition as a RuntimeError whose text says "out of memory"."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def failure(exc: BaseException) -> dict:
    if is_oom(exc):
        return {"error": "oom", "message": _first_line(str(exc)) or "out of memory"}
    return {"error": "error", "message": f"{type(exc).__name__}: {_first_line(str(exc))}"}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:500] if text.strip() else ""


def prepare(options: Options) -> None:
    """Settings a training script of today uses: cuDNN autotuning and TF32 matrix products
    (the FP32-only datasheet figures are what the suite is there to correct); one thread per
    process on a CPU."""
    if options.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.set_float32_matmul_precision("high")
    else:
        torch.set_num_threads(1)  # a CPU run's processes (a pair, the ranks) must not fight over cores


def measure_process(family: str, batch_size: int | None, options: Options, *, gpu: int = 0, wrap=None,
                    agree=None, power_gpus=None, started=None, done=None) -> dict:
    """One process's measurement. `started` (a barrier) lines the processes of a pair up
    before warm-up; `done` (this process's event, and all of them) keeps a pair's process
    stepping after its own measurement until its partner's is over too, so each is timed
    under the other's load."""
    device = f"cuda:{gpu}" if options.device == "cuda" else "cpu"
    if options.device == "cuda":
        torch.cuda.set_device(gpu)
        torch.cuda.reset_peak_memory_stats(gpu)
        sync = torch.cuda.synchronize
    else:
        def sync():
            return None
    kwargs = {"wrap": wrap} if wrap is not None else {}
    trainable = models.build(family, batch_size, device, tiny=options.tiny, **kwargs)
    uuids = cuda_uuids(power_gpus) if power_gpus and options.device == "cuda" else []
    sampler = PowerSampler(uuids) if uuids else None

    readings = {}

    def on_timed(starting: bool):
        if starting:
            sampler.start()
        else:
            readings["power_w"], readings["utilization"] = sampler.stop()

    if started is not None:
        started.wait()
    timing = TINY_TIMING if options.tiny else GPU_TIMING
    rate = measure(trainable.step, sync, timing, on_timed=on_timed if sampler else None,
                   **({"agree": agree} if agree else {}))
    memory = torch.cuda.max_memory_reserved(gpu) / _GIB if options.device == "cuda" else None
    if done is not None:
        mine, everyone = done
        mine.set()
        while not all(event.is_set() for event in everyone):
            trainable.step()
        sync()
    return {
        "throughput": rate.throughput, "ci_low": rate.ci_low, "ci_high": rate.ci_high, "steps_timed": rate.steps,
        "stable": rate.stable, "power_w": readings.get("power_w"), "utilization": readings.get("utilization"),
        "memory_gb": memory,
        "pid": os.getpid(), "finished": time.time(),
    }


def alone(case: Case, options: Options) -> dict:
    prepare(options)
    try:
        return measure_process(case.family, case.batch_size, options, power_gpus=[0])
    except Exception as exc:
        return failure(exc)
