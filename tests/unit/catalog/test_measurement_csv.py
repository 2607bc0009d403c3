"""The measurements CSV reader on its own (no database): values, defaults and syntax errors.

Every kind of bad row, including unknown names, is checked through the import service in
test_measurements_import.py; here is what the reader hands to benchmarks.
"""
from datetime import UTC, datetime, timedelta, timezone

import pytest

from catalog.measurement_csv import COLUMNS, SOURCES, MeasurementFileError, parse_measurements, read_measurements
from catalog.measurement_record import MeasurementRecord
from catalog.models import MeasurementSource


def write(tmp_path, content, name="m.csv"):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_every_column_is_read(tmp_path):
    path = write(
        tmp_path,
        ",".join(COLUMNS) + "\n"
        "ResNet-50 (batch size 64),v100,2,false,LM (batch size 20),7.5,3.25,250.5,0.93,14.2,telemetry,"
        '2024-05-01T12:00:00+02:00,"run 17, node a"\n',
    )
    (row,) = read_measurements(path)
    assert parse_measurements(path).records == {2: row}
    assert row == MeasurementRecord(
        workload="ResNet-50 (batch size 64)",
        gpu_type="v100",
        num_gpus=2,
        consolidated=False,
        partner="LM (batch size 20)",
        throughput=7.5,
        partner_throughput=3.25,
        power_w=250.5,
        utilization=0.93,
        memory_gb=14.2,
        source="telemetry",
        observed_at=datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=2))),
        reference="run 17, node a",
    )


def test_defaults_columns_in_any_order_bom_blank_lines_and_spaces(tmp_path):
    path = write(
        tmp_path,
        "\ufeffthroughput, gpu_type ,workload,observed_at\r\n"
        "\r\n"
        " 0 ,k80,LM (batch size 20),2024-05-01T12:00:00Z\r\n"
        ",,,\r\n",
    )
    (row,) = read_measurements(path)
    assert parse_measurements(path).records == {3: row}
    assert row == MeasurementRecord(
        workload="LM (batch size 20)", gpu_type="k80", throughput=0.0, source="profiling",
        observed_at=datetime(2024, 5, 1, 12, tzinfo=UTC),
    )
    assert (row.num_gpus, row.consolidated, row.partner, row.source, row.reference) == (1, True, None, "profiling", "")


def test_lines_count_from_the_start_of_each_record(tmp_path):
    path = write(
        tmp_path,
        'workload,gpu_type,throughput,reference\nA3C,k80,1,"two\nlines"\nA3C,k80,-1,\n',
    )
    with pytest.raises(MeasurementFileError) as caught:
        read_measurements(path)
    assert [str(e) for e in caught.value.errors] == [f"{path}:4: throughput: -1 is negative"]


def test_all_problems_of_a_row_are_reported(tmp_path):
    path = write(tmp_path, "workload,gpu_type,throughput,utilization\n,k80,x,2\n")
    with pytest.raises(MeasurementFileError) as caught:
        read_measurements(path)
    assert [e.reason for e in caught.value.errors] == [
        "workload is empty",
        "throughput: 'x' is not a number",
        "utilization: 2 is not within 0..1 (a fraction, not a percentage)",
    ]
    assert all(e.line == 2 for e in caught.value.errors)


def test_sources_match_the_model():
    assert set(SOURCES) == set(MeasurementSource.values)
