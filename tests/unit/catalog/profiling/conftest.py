"""Suite tests run on the CPU in tiny mode; each case runs in a forked process (fork, on a
CPU), which inherits the test's monkeypatches of the models."""
import time

import pytest
import torch

from catalog.profiling import models
from catalog.profiling.cases import Case
from catalog.profiling.worker import Options

TINY = Options("cpu", tiny=True)


def _raises(exc):
    def build(batch, device, tiny, wrap):
        raise exc

    return build


def _hangs(batch, device, tiny, wrap):
    time.sleep(3600)


@pytest.fixture
def broken_families(monkeypatch):
    """Families whose model fails: with an error, with CUDA's out-of-memory error, by hanging."""
    monkeypatch.setitem(models._BUILDERS, "Broken", _raises(ValueError("bad shape (1, 2)")))
    monkeypatch.setitem(models._BUILDERS, "TooBig", _raises(torch.cuda.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total capacity)\nmore detail")))
    monkeypatch.setitem(models._BUILDERS, "Hangs", _hangs)


def case_of(family: str, workload: str = "LM (batch size 20)", **fields) -> Case:
    return Case(f"{family} case", workload, family, 20, **fields)
