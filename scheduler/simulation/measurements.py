"""Measurement records for the simulator, from the reference data (Gavel) or an import-format CSV.

Truth, catalog and P1 read the same records (catalog.measurement_record) from the same file, so
they see the same numbers.
"""
from catalog.measurement_csv import read_measurements
from catalog.measurement_record import MeasurementRecord
from catalog.predictors import records_from_gavel


def load_records(path: str | None) -> list[MeasurementRecord]:
    """Records of a measurements CSV (docs/measurements-csv.md), or the reference data when
    `path` is None. A bad file raises catalog.measurement_csv.MeasurementFileError."""
    return read_measurements(path) if path else records_from_gavel()


def without_memory(records: list[MeasurementRecord]) -> list[MeasurementRecord]:
    """The records as truth and the simulated catalog read them: the simulation models no GPU
    memory (docs/simulation.md), so a file's peak-memory readings hold no job off a GPU."""
    return [r._replace(memory_gb=None) for r in records]
