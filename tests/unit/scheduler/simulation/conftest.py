import pytest

from scheduler.simulation.measurements import load_records
from scheduler.simulation.run import fit_predictor


@pytest.fixture(scope="session")
def reference_records():
    return load_records(None)


@pytest.fixture(scope="session")
def quick_model(reference_records):
    """A tiny predictor on the reference data (a few seconds to fit), shared by the tests."""
    return fit_predictor(reference_records, seed=0, quick=True)
