"""The agent's timing flags: NaN, infinities, 0 and negatives refused in one line before the
agent starts (NaN passes every `<= 0` test, 0 polls or fences on every turn of the loop), a
heartbeat slower than --fence-after refused, one slower than the control plane's default
timeout warned about."""
import argparse
import logging

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
