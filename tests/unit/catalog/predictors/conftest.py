"""A small slice of the reference catalog and tiny models, so the whole set runs in seconds."""
import pytest
import torch

from catalog.predictors import PerformancePredictor, build_catalog, records_from_gavel

#: Two or three workloads of every family: enough for neighbours, small enough to train fast.
SLICE = (
    "ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)", "ResNet-50 (batch size 32)",
    "ResNet-50 (batch size 64)", "Transformer (batch size 32)", "Transformer (batch size 64)",
    "LM (batch size 10)", "LM (batch size 20)", "Recommendation (batch size 1024)", "A3C", "CycleGAN",
)
TINY = {"hidden": 8, "epochs": 2, "draws": 1, "seed": 3}


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def full_catalog():
    return build_catalog(records_from_gavel())


@pytest.fixture(scope="session")
def catalog(full_catalog):
    return full_catalog.without([w for w in full_catalog.workloads if w not in SLICE])


@pytest.fixture(scope="session")
def held_out(catalog):
    """The catalog without ResNet-50 (batch size 64), and that workload's features."""
    name = "ResNet-50 (batch size 64)"
    return catalog.without([name]), catalog.features[catalog.workloads.index(name)]


@pytest.fixture(scope="session")
def model(held_out):
    return PerformancePredictor(architecture="feedforward", **TINY).fit(held_out[0])
