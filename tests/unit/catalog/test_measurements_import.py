"""measurements_import: all rows or none, and every problem reported as file:line: reason."""
import pytest
from django.utils import timezone

from catalog.measurement_csv import COLUMNS, MeasurementFileError
from catalog.models import Measurement
from catalog.services import measurements_import

HEADER = ",".join(COLUMNS)
GOOD = {
    "workload": "ResNet-50 (batch size 64)",
    "gpu_type": "v100",
    "num_gpus": "1",
    "consolidated": "true",
    "partner": "",
    "throughput": "12.5",
    "partner_throughput": "",
    "power_w": "250",
    "utilization": "0.9",
    "memory_gb": "11.5",
    "source": "profiling",
    "observed_at": "2024-05-01T12:00:00Z",
    "reference": "",
}


def row(**changes):
    return ",".join({**GOOD, **changes}[c] for c in COLUMNS)


@pytest.fixture
def catalog(v100, k80, resnet50, lm):
    """Two GPU types and two workloads; no measurements."""


@pytest.fixture
def csv_file(tmp_path):
    def write(content, name="m.csv"):
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path

    return write


def import_errors(path):
    with pytest.raises(MeasurementFileError) as caught:
        measurements_import(path=path)
    assert Measurement.objects.count() == 0
    return [str(e) for e in caught.value.errors]


def test_good_file_is_imported(catalog, csv_file):
    path = csv_file(
        "\n".join(
            [
                HEADER,
                row(reference="bench 1"),
                row(partner="LM (batch size 20)", throughput="7.5", partner_throughput="3", power_w="", utilization=""),
                row(gpu_type="k80", num_gpus="2", consolidated="false", throughput="0", observed_at="", source=""),
            ]
        )
        + "\n"
    )
    before = timezone.now()
    created = measurements_import(path=path)
    assert len(created) == Measurement.objects.count() == 3
    alone, pair, spread = Measurement.objects.order_by("id")
    assert (alone.workload.name, alone.gpu_type.name, alone.throughput, alone.power_w, alone.utilization) == (
        "ResNet-50 (batch size 64)", "v100", 12.5, 250, 0.9
    )
    assert alone.memory_gb == 11.5
    assert alone.reference == "bench 1" and alone.source == "profiling"
    assert (pair.partner.name, pair.partner_throughput, pair.power_w) == ("LM (batch size 20)", 3, None)
    assert pair.reference == "m.csv:3"
    assert (spread.num_gpus, spread.consolidated, spread.throughput, spread.source) == (2, False, 0, "profiling")
    assert spread.observed_at >= before


BAD_ROWS = [
    ("wrong number of fields", "ResNet-50 (batch size 64),v100,1", "expected 13 fields, found 3"),
    ("non-numeric", row(throughput="fast"), "throughput: 'fast' is not a number"),
    ("NaN", row(throughput="NaN"), "throughput: 'NaN' is not a finite number"),
    ("infinite", row(power_w="inf"), "power_w: 'inf' is not a finite number"),
    ("negative", row(throughput="-0.5"), "throughput: -0.5 is negative"),
    ("negative power", row(power_w="-1"), "power_w: -1 is negative"),
    ("negative memory", row(memory_gb="-2"), "memory_gb: -2 is negative"),
    ("num_gpus 0", row(num_gpus="0"), "num_gpus: 0 is not between 1 and 32767"),
    ("num_gpus not whole", row(num_gpus="1.5"), "num_gpus: '1.5' is not a whole number"),
    ("utilization > 1", row(utilization="93"), "utilization: 93 is not within 0..1 (a fraction, not a percentage)"),
    (
        "unknown workload",
        row(workload="ResNet-50 (batch size 65)"),
        "unknown workload 'ResNet-50 (batch size 65)' (did you mean 'ResNet-50 (batch size 64)'?)",
    ),
    ("unknown gpu type", row(gpu_type="V100"), "unknown gpu type 'V100' (known: k80, v100)"),
    ("unknown partner", row(partner="BERT"), "unknown partner 'BERT'"),
    ("bad boolean", row(consolidated="yes"), "consolidated: 'yes' is not true or false"),
    ("bad timestamp", row(observed_at="yesterday"), "observed_at: 'yesterday' is not an ISO 8601 timestamp"),
    (
        "timestamp without timezone",
        row(observed_at="2024-05-01T12:00:00"),
        "observed_at: '2024-05-01T12:00:00' has no timezone (add Z or an offset such as +02:00)",
    ),
    (
        "unknown source",
        row(source="guess"),
        "source: unknown source 'guess' (sources: profiling, telemetry, shadow, reference)",
    ),
    ("empty workload", row(workload=""), "workload is empty"),
    ("partner throughput alone", row(partner_throughput="2"), "partner_throughput given without a partner"),
    ("long reference", row(reference="x" * 201), "reference: longer than 200 characters"),
    ("unclosed quote", row(reference='"run 1'), 'a quoted field opened on this line is never closed (a " is missing)'),
    ("text after a closing quote", row(reference='"run" 1'), "not valid CSV: ',' expected after '\"'"),
    ("huge throughput", row(throughput="1e308"), "throughput: 1e+308 steps/s is above 1e+06, more than any job runs"),
    ("huge power", row(power_w="1e308"), "power_w: 1e+308 W is above 2000 W per GPU (1 GPU)"),
    ("memory beyond the type", row(memory_gb="1e300"), "memory_gb: 1e+300 GB is more than the GPU type has (16 GB)"),
    (
        "far future",
        row(observed_at="9999-12-31T23:59:59+00:00"),
        "observed_at: 9999-12-31T23:59:59+00:00 is more than 300 s in the future; is the clock set?",
    ),
    (
        "before 2000", row(observed_at="1999-12-31T23:00:00+00:00"),
        "observed_at: 1999-12-31T23:00:00+00:00 is before 2000",
    ),
]


@pytest.mark.parametrize("bad, reason", [case[1:] for case in BAD_ROWS], ids=[case[0] for case in BAD_ROWS])
def test_a_bad_row_is_reported_at_its_line_and_nothing_is_imported(catalog, csv_file, bad, reason):
    path = csv_file(f"{HEADER}\n{row()}\n{bad}\n{row()}\n")
    assert import_errors(path) == [f"{path}:3: {reason}"]


@pytest.mark.parametrize(
    "content, error",
    [
        (
            "workload,gpu_type,throughput,speed\nA3C,k80,1,2\n",
            "1: unknown column 'speed' (columns: " + ", ".join(COLUMNS) + ")",
        ),
        ("workload,gpu_type\nA3C,k80\n", "1: missing required column 'throughput'"),
        ("workload,gpu_type,throughput,workload\nA3C,k80,1,A3C\n", "1: column 'workload' appears more than once"),
        ("", "1: empty file: expected a header row"),
        ("\n \n", "1: empty file: expected a header row"),
        (HEADER + "\n", "1: no measurements after the header"),
        (f"{HEADER}\n{row()}\n".encode() + b"R\xe9sNet,v100,1\n", "3: not UTF-8 text (byte 0xe9)"),
    ],
    ids=["unknown column", "missing column", "duplicate column", "empty", "blank", "header only", "not UTF-8"],
)
def test_bad_files(catalog, csv_file, content, error):
    path = csv_file(content)
    assert import_errors(path) == [f"{path}:{error}"]


def test_a_missing_file(catalog, tmp_path):
    path = tmp_path / "nowhere.csv"
    assert import_errors(path) == [f"{path}: no such file"]


def test_every_problem_of_every_row_is_reported_in_line_order(catalog, csv_file):
    path = csv_file(
        "\n".join([HEADER, row(), row(gpu_type="a40"), row(), row(throughput="-1", workload="nope"), row(num_gpus="0")])
        + "\n"
    )
    assert import_errors(path) == [
        f"{path}:3: unknown gpu type 'a40' (known: k80, v100)",
        f"{path}:5: throughput: -1 is negative",
        f"{path}:5: unknown workload 'nope'",
        f"{path}:6: num_gpus: 0 is not between 1 and 32767",
    ]
