"""The line protocol and the CSV rows: an OOM is a measurement of 0, an error is none."""
import io
import json
import math

import pytest

from catalog.measurement_csv import read_measurements
from catalog.profiling import SUITE_VERSION
from catalog.profiling.output import CsvOut, csv_row, measurement
from telemetry.agent import contract

OK = {"case": "ResNet-50 (batch size 64) + LM (batch size 20)", "workload": "ResNet-50 (batch size 64)", "num_gpus": 1,
      "partner": "LM (batch size 20)", "throughput": 9.5, "partner_throughput": 30.25, "ci_low": 9.4,
      "ci_high": 9.6, "steps_timed": 120, "stable": True, "power_w": 250.0, "utilization": 0.97, "memory_gb": 7.5,
      "seconds": 12.0}
OOM = {"case": "GPT-2 (batch size 16) x2", "workload": "GPT-2 (batch size 16)", "num_gpus": 2, "partner": None,
       "error": "oom", "message": "CUDA out of memory", "seconds": 3.0}
TIMEOUT = {**OOM, "error": "timeout", "message": "no result within 300 s; the case was stopped"}


def test_a_measurement_has_the_protocols_keys():
    line = measurement(OK)
    assert line == {"case": OK["case"], "workload": "ResNet-50 (batch size 64)", "num_gpus": 1, "consolidated": True,
                    "partner": "LM (batch size 20)", "throughput": 9.5, "partner_throughput": 30.25, "power_w": 250.0,
                    "utilization": 0.97, "memory_gb": 7.5, "ci_low": 9.4, "ci_high": 9.6, "steps_timed": 120,
                    "suite_version": SUITE_VERSION}
    assert measurement({**OK, "ci_high": math.inf})["ci_high"] is None  # one batch: no interval, not infinity


def test_out_of_memory_is_a_zero_and_a_timeout_is_no_measurement():
    oom, timeout = measurement(OOM), measurement(TIMEOUT)
    assert (oom["throughput"], oom["error"], oom["message"], oom["partner_throughput"]) == (
        0.0, "oom", "CUDA out of memory", None)
    assert (timeout["throughput"], timeout["error"]) == (None, "timeout")
    assert measurement({**OOM, "partner": "A3C"})["partner_throughput"] == 0.0
    assert csv_row(TIMEOUT, "h100") is None


def test_contract_prints_one_strict_json_line():
    stream = io.StringIO()
    contract.Job(stream=stream).measurement(measurement({**OK, "case": "a\nb"}))
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.startswith(contract.MEASUREMENT_PREFIX + " {")
    assert json.loads(text.split(" ", 1)[1])["case"] == "a\nb"
    with pytest.raises(ValueError):
        contract.measurement_line({"throughput": math.nan})


def test_rows_are_what_the_csv_reader_accepts(tmp_path):
    path = tmp_path / "suite.csv"
    out = CsvOut(path, "h100")
    for result in (OK, OOM, TIMEOUT):
        out.add(result)
    out.close()
    records = read_measurements(path)
    assert out.rows == 2 and len(records) == 2
    pair, oom = records
    assert (pair.workload, pair.gpu_type, pair.partner, pair.throughput, pair.partner_throughput) == (
        "ResNet-50 (batch size 64)", "h100", "LM (batch size 20)", 9.5, 30.25)
    assert (pair.source, pair.reference) == ("profiling", f"gogh-suite/{SUITE_VERSION}/{OK['case']}")
    assert (oom.num_gpus, oom.throughput, oom.memory_gb, oom.power_w) == (2, 0.0, None, None)
