"""Gavel's throughput file is read completely and faithfully, without Django."""
import json

import pytest

from catalog.gavel import GAVEL_THROUGHPUTS, GavelFormatError, parse_throughputs, parse_workload, read_throughputs


@pytest.fixture(scope="module")
def raw():
    return json.loads(GAVEL_THROUGHPUTS.read_text())


@pytest.fixture(scope="module")
def records():
    return read_throughputs()


def test_one_record_per_value_in_the_file(raw, records):
    # Counted from the JSON itself: one record per (worker type, job key, partner key) entry.
    expected = sum(len(partners) for jobs in raw.values() for partners in jobs.values())
    isolated = sum(len(jobs) for jobs in raw.values())
    assert len(records) == expected
    assert sum(r.partner is None for r in records) == isolated
    assert len({r.reference for r in records}) == expected


def test_worker_types_workloads_and_families(records):
    assert {(r.gpu_type, r.consolidated) for r in records} == {
        (t, c) for t in ("k80", "p100", "v100") for c in (True, False)
    }
    workloads = {r.workload for r in records}
    assert len(workloads) == 26
    assert {w.family for w in workloads} == {
        "ResNet-18", "ResNet-50", "Transformer", "LM", "Recommendation", "A3C", "CycleGAN"
    }
    assert {r.partner for r in records if r.partner} == workloads
    assert {r.num_gpus for r in records} == {1, 2, 4, 8}


def test_values_are_taken_as_written(raw, records):
    by_reference = {r.reference: r for r in records}
    job = "('ResNet-50 (batch size 64)', 1)"
    partner = "('LM (batch size 20)', 1)"
    alone = by_reference[f"gavel:v100:{job}:null"]
    assert alone.throughput == raw["v100"][job]["null"]
    assert alone.partner is None and alone.partner_throughput is None
    pair = by_reference[f"gavel:v100:{job}:{partner}"]
    assert [pair.throughput, pair.partner_throughput] == raw["v100"][job][partner]
    assert pair.partner.name == "LM (batch size 20)"


def test_zero_entries_are_kept(raw, records):
    zero_in_file = sum(
        1
        for jobs in raw.values()
        for partners in jobs.values()
        for value in partners.values()
        if value == 0 or value == [0, 0]
    )
    assert zero_in_file > 0
    assert sum(r.throughput == 0 and not r.partner_throughput for r in records) == zero_in_file


def test_unconsolidated_worker_types_are_not_consolidated(records):
    spread = [r for r in records if r.worker_type.endswith("_unconsolidated")]
    assert spread and all(not r.consolidated and r.gpu_type == r.worker_type.split("_")[0] for r in spread)
    assert all(r.consolidated for r in records if "_" not in r.worker_type)


def test_workload_names():
    resnet = parse_workload("ResNet-50 (batch size 64)")
    assert (resnet.family, resnet.batch_size) == ("ResNet-50", 64)
    a3c = parse_workload("A3C")
    assert (a3c.family, a3c.batch_size) == ("A3C", None)


@pytest.mark.parametrize(
    "data",
    [
        {"v100": {"__import__('os').getcwd()": {"null": 1.0}}},
        {"v100": {"('A3C', 0)": {"null": 1.0}}},
        {"v100": {"('A3C', 1)": {"null": -1.0}}},
        {"v100": {"('A3C', 1)": {"null": "fast"}}},
        {"v100": {"('A3C', 1)": {"('CycleGAN', 1)": [1.0]}}},
        {"v100": {"('A3C', 2)": {"('CycleGAN', 1)": [1.0, 1.0]}}},
    ],
    ids=["code-not-literal", "zero-gpus", "negative", "not-a-number", "short-pair", "partner-size-differs"],
)
def test_malformed_files_are_refused(data):
    with pytest.raises(GavelFormatError):
        parse_throughputs(data)

