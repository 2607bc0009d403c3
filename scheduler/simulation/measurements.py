"""Measurement rows for the simulator, from the reference data (Gavel) or an import-format CSV.

The predictors read catalog.predictors.Record, the optimiser's CatalogPredictions reads
catalog_predictions.MeasurementRow; both come from the same file here, so truth, catalog and
P1 see the same numbers.
"""
from catalog.predictors import Record, records_from_csv, records_from_gavel
from scheduler.optimizer.catalog_predictions import MeasurementRow


def load_records(path: str | None) -> list[Record]:
    """Records of a measurements CSV (docs/measurements-csv.md), or the reference data when
    `path` is None. A bad file raises catalog.measurement_csv.MeasurementFileError."""
    return records_from_csv(path) if path else records_from_gavel()


def to_rows(records: list[Record]) -> list[MeasurementRow]:
    return [
        MeasurementRow(
            r.workload, r.gpu_type, r.num_gpus, r.consolidated, r.partner, r.throughput, r.power_w, r.utilization
        )
        for r in records
    ]
