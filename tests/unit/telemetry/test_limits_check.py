"""The power limits' device check (tests/device/limits_check.py) against the fake NVML, with the
real tiny training job as a subprocess on the CPU: every level the optimiser may choose is set
in turn and the job measured at it, a refused limit is reported and nothing runs at it, and the
default limit comes back at the end, also when the job fails."""
import importlib.util
import os
import sys
from pathlib import Path

import pynvml
import pytest

from telemetry.agent.nvml import NvmlBackend

from .fake_nvml import fake_nvml

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("limits_check", ROOT / "tests" / "device" / "limits_check.py")
limits_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(limits_check)

#: Long enough that the job's timed part (after its warm-up) spans many samples 0.01 s apart: 60
#: steps ran in 0.05 s on a quiet CPU, and no sample fell inside.
TINY_JOB = [sys.executable, str(ROOT / "tests" / "device" / "train_job.py"), "--model", "tiny", "--steps", "1500",
            "--batch-size", "2", "--checkpoint-every", "0"]


@pytest.fixture
def node(tmp_path):
    """(fake NVML: one GPU allowing 100-300 W, default 300 W; its backend; the job's environment)."""
    nvml = fake_nvml(count=1, power_mw=200_000, limit_range_mw=(100_000, 300_000))
    backend = NvmlBackend(nvml=nvml)
    backend.open()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOGH_CHECKPOINT_DIR": str(tmp_path / "ckpt")}
    return nvml, backend, env


def test_every_level_is_set_and_measured_then_the_default_comes_back(node, monkeypatch):
    nvml, backend, env = node
    seen = []
    set_limit = backend.set_power_limit
    monkeypatch.setattr(backend, "set_power_limit", lambda i, w: (seen.append((w, nvml.limits_mw[i])), set_limit(i, w)))
    report = limits_check.measure(backend, 0, TINY_JOB, env, every_s=0.01)
    # 60-90 % of the 300 W default, then the default itself; the restore last.
    assert [w for w, _ in seen] == [180, 210, 240, 270, 300, 300]
    assert [level["limit_w"] for level in report["levels"]] == [180, 210, 240, 270, 300]
    for level in report["levels"]:
        assert level["enforced_w"] == level["limit_w"]  # read back from NVML, not assumed
        assert level["steps_per_s"] > 0 and level["mean_power_w"] == 200.0 and level["power_samples"] >= 1
    assert report["restored_w"] == report["default_w"] == 300.0 and nvml.limits_mw[0] == 300_000
    assert report["range_w"] == [100.0, 300.0]


def test_a_refused_limit_is_reported_and_nothing_runs_at_it(node, monkeypatch):
    nvml, backend, env = node
    nvml.refuse[0] = pynvml.NVML_ERROR_NO_PERMISSION
    ran = []
    monkeypatch.setattr(limits_check, "run_job", lambda *args: ran.append(args) or {})
    report = limits_check.measure(backend, 0, TINY_JOB, env)
    assert ran == []
    assert all("no permission" in level["refused"] for level in report["levels"])
    assert "no permission" in report["restore_refused"] and report["restored_w"] == 300.0  # never left it


def test_a_failing_job_is_reported_and_the_default_still_comes_back(node):
    nvml, backend, env = node
    report = limits_check.measure(backend, 0, [sys.executable, "-c", "raise SystemExit(3)"], env, every_s=0.05)
    assert {level["error"] for level in report["levels"]} == {"the job exited 3"}
    assert nvml.limits_mw[0] == 300_000 and report["restored_w"] == 300.0


def test_an_interrupted_check_restores_the_default(node, monkeypatch):
    nvml, backend, env = node

    def interrupted(*args):
        assert nvml.limits_mw[0] == 180_000  # the first level is in force while its job runs
        raise KeyboardInterrupt

    monkeypatch.setattr(limits_check, "run_job", interrupted)
    with pytest.raises(KeyboardInterrupt):
        limits_check.measure(backend, 0, TINY_JOB, env)
    assert nvml.limits_mw[0] == 300_000  # put back
