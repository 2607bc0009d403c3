"""The agent's timing flags: NaN, infinities, 0 and negatives refused in one line before the
agent starts (NaN passes every `<= 0` test, 0 polls or fences on every turn of the loop), a
heartbeat slower than --fence-after refused, one slower than the control plane's default
timeout warned about."""
import argparse
import logging
from pathlib import Path

import pynvml
import pytest

from telemetry.agent import cli
from telemetry.agent.nvml import NvmlBackend

from .fake_nvml import fake_nvml

BASE = ["--url", "http://127.0.0.1:9", "--token", "t"]


def _run(argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args([*BASE, *argv]))


@pytest.fixture
def no_driver(monkeypatch):
    """The agent gets past its flags and stops at the (missing) driver: proof that it would run."""
    monkeypatch.setattr(cli, "_nvml_backend",
                        lambda: NvmlBackend(nvml=fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)))


@pytest.mark.parametrize("flag", ["--heartbeat-interval", "--poll-interval", "--upload-interval",
                                  "--progress-interval", "--grace-period", "--fence-after", "--speedup"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_every_interval_must_be_finite_and_positive(flag, value, capsys, no_driver):
    assert _run([flag, value]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"run_agent: {flag} must be a finite number greater than 0" in err and err.count("\n") == 1


def test_a_heartbeat_not_shorter_than_fence_after_is_refused(capsys, no_driver):
    assert _run(["--heartbeat-interval", "60"]) == cli.EXIT_USAGE
    assert "--heartbeat-interval (60 s) must be shorter than --fence-after (60 s" in capsys.readouterr().err


def test_a_heartbeat_beyond_the_default_timeout_runs_with_a_warning(caplog, no_driver):
    with caplog.at_level(logging.WARNING, logger=cli.__name__):
        assert _run(["--heartbeat-interval", "90", "--fence-after", "300"]) == cli.EXIT_NO_DRIVER
    assert "--heartbeat-interval 90 s is above the control plane's default heartbeat timeout (60 s)" in caplog.text


def test_the_defaults_and_a_fast_test_setup_pass_without_a_warning(caplog, no_driver):
    with caplog.at_level(logging.WARNING, logger=cli.__name__):
        assert _run([]) == cli.EXIT_NO_DRIVER
        assert _run(["--heartbeat-interval", "1", "--poll-interval", "0.5", "--speedup", "50"]) == cli.EXIT_NO_DRIVER
    assert "heartbeat" not in caplog.text


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_the_simulated_checkpoint_interval_is_finite_and_not_negative(value, capsys, no_driver):
    assert _run(["--simulate-checkpoint-interval", value]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "run_agent: --simulate-checkpoint-interval must be a finite number of seconds >= 0" in err
    assert err.count("\n") == 1


def test_checkpoint_flags_reach_the_agent(monkeypatch, tmp_path):
    configs = []

    class Recorded:
        def __init__(self, *, backend, client, config):
            configs.append(config)

        def run(self):
            pass

    monkeypatch.setattr(cli, "_nvml_backend", lambda: None)
    monkeypatch.setattr(cli, "Agent", Recorded)
    monkeypatch.delenv("GOGH_AGENT_CHECKPOINT_DIR", raising=False)
    assert _run(["--log-dir", str(tmp_path / "logs"), "--simulate-checkpoint-interval", "0"]) == 0
    assert _run(["--checkpoint-dir", "/shared/ckpt"]) == 0
    first, second = configs
    assert (first.job_checkpoint_root, first.simulate_checkpoint_interval_s) == (tmp_path / "logs" / "checkpoints", 0)
    assert (second.job_checkpoint_root, second.simulate_checkpoint_interval_s) == (Path("/shared/ckpt"), 60)
