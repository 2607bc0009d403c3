"""The device check of the power limits (issue 20): on a real NVIDIA GPU, the agent's own NVML
backend sets each limit a round may choose for the GPU (optimizer.limit_levels.type_levels, then
the default), the real training job (train_job.py) runs at it, and NVML's power and the job's
steps/s are measured; the default limit is restored at the end, also when a level or the job
fails. A refused limit is reported with NVML's reason and nothing runs at it. Writes
$OUT/limits.json and prints one line per level. Setting a limit needs root.

    PY=python3 OUT=/tmp/out $PY tests/device/limits_check.py [--gpu 0] [--steps 400] [--model resnet50]

CI never runs it on a GPU; tests/unit/telemetry/test_limits_check.py runs it against the fake NVML
with the tiny model.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repo root: the agent's NVML backend and the optimiser's levels

from scheduler.optimizer.limit_levels import type_levels  # noqa: E402
from telemetry.agent import progress  # noqa: E402
from telemetry.agent.gpus import PowerLimitRefused  # noqa: E402
from telemetry.agent.nvml import NvmlBackend  # noqa: E402

#: The job's first steps (start-up, cuDNN autotuning) are left out of its rate.
WARM_UP_FRACTION = 0.2


def levels_for(info, default: float) -> list[float]:
    """The limits a round may choose for this board, lowest first, then its default."""
    below = type_levels(default, [(info.power_limit_min_w, info.power_limit_max_w, default, None)])
    return [*below, default]


def run_job(argv: list[str], env: dict, sample, every_s: float) -> dict:
    """Run the job to its end, sampling the GPU every `every_s` meanwhile: its steps/s after the
    warm-up (from its progress lines' arrival times) and the mean of the power samples taken
    while it ran past the warm-up."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    steps: list[tuple[float, int, int | None]] = []

    def read() -> None:
        for line in proc.stdout:
            parsed = progress.parse(line.strip())
            if parsed:
                steps.append((time.monotonic(), *parsed))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    power: list[tuple[float, float]] = []
    while proc.poll() is None:
        power += [(time.monotonic(), s.power_w) for s in sample() if s.power_w is not None]
        time.sleep(every_s)
    reader.join(timeout=30)
    if proc.returncode != 0:
        return {"error": f"the job exited {proc.returncode}"}
    total = (steps[-1][2] or steps[-1][1]) if steps else 0
    warm = [(t, step) for t, step, _ in steps if step >= WARM_UP_FRACTION * total]
    if len(warm) < 2 or warm[-1][0] <= warm[0][0]:
        return {"error": "too few progress lines to time the job (more --steps)"}
    (t0, s0), (t1, s1) = warm[0], warm[-1]
    during = [w for t, w in power if t0 <= t <= t1]
    return {"steps_per_s": round((s1 - s0) / (t1 - t0), 3),
            "mean_power_w": round(statistics.fmean(during), 1) if during else None,
            "power_samples": len(during)}


def measure(backend: NvmlBackend, index: int, job_argv: list[str], env: dict, every_s: float = 1.0) -> dict:
    """Every level of GPU `index` in turn, then its default limit back; the report."""
    info = backend.devices()[index]
    uuid, default = info.uuid, info.power_limit_default_w or info.power_limit_w
    report = {"gpu": info.product_name, "uuid": uuid, "default_w": info.power_limit_default_w,
              "range_w": [info.power_limit_min_w, info.power_limit_max_w], "levels": []}

    def sample():
        return [s for s in backend.sample(time.time()) if s.uuid == uuid]

    try:
        for watts in levels_for(info, default):
            level = {"limit_w": watts}
            report["levels"].append(level)
            try:
                backend.set_power_limit(index, watts)
            except PowerLimitRefused as refused:
                level["refused"] = str(refused)
                continue
            level["enforced_w"] = backend.power_limit(index)
            level.update(run_job(job_argv, env, sample, every_s))
    finally:
        try:
            backend.set_power_limit(index, default)
        except PowerLimitRefused as refused:
            report["restore_refused"] = str(refused)
        report["restored_w"] = backend.power_limit(index)
    return report


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--model", choices=["resnet50", "resnet18", "tiny"], default="resnet50")
    args = parser.parse_args()
    out = Path(os.environ.get("OUT", "/tmp/gogh-device-out"))
    out.mkdir(parents=True, exist_ok=True)
    job = [sys.executable, str(ROOT / "tests" / "device" / "train_job.py"), "--steps", str(args.steps),
           "--model", args.model, "--checkpoint-every", "0"]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(args.gpu), "GOGH_CHECKPOINT_DIR": str(out / "limits-ckpt")}
    backend = NvmlBackend()
    backend.open()
    try:
        report = measure(backend, args.gpu, job, env)
    finally:
        backend.close()
    (out / "limits.json").write_text(json.dumps(report, indent=2))
    for level in report["levels"]:
        print(json.dumps(level), flush=True)
    print(f"default {report['default_w']} W, restored {report['restored_w']} W", flush=True)
    failed = [lv for lv in report["levels"] if "error" in lv or "refused" in lv]
    return 1 if failed or report["restored_w"] != report["default_w"] else 0


if __name__ == "__main__":
    sys.exit(main())
