"""Estimates for GPU types without measurements, from datasheet specs."""
import math

import numpy as np
import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.predictors import UnknownGpuType
from catalog.predictors.gpu_specs import GPU_DATASHEETS, GpuDatasheet, carry_over, estimate_unmeasured


def test_every_default_gpu_type_has_specs():
    assert {d.name for d in GPU_TYPE_DEFAULTS} <= set(GPU_DATASHEETS)


def test_carry_over_mixes_compute_and_bandwidth_by_compute_density():
    source, target = GpuDatasheet(10.0, 100.0, 16, ""), GpuDatasheet(20.0, 400.0, 16, "")
    assert carry_over(0.0, 1.0, source, target) == pytest.approx(math.log(2))
    assert carry_over(0.0, 0.0, source, target) == pytest.approx(math.log(4))
    assert carry_over(0.0, 0.5, source, target) == pytest.approx(math.log(2) / 2 + math.log(4) / 2)


def test_unmeasured_type_is_estimated_low_confidence(model, held_out):
    features = held_out[1]
    prediction = model.predict(features)
    h100 = estimate_unmeasured(prediction, features, "h100")
    assert h100.low_confidence and h100.tau > prediction.isolated("v100") and h100.tau_std >= 0.5
    assert h100.rho.shape == (len(prediction.partners),) and ((h100.rho >= 0) & (h100.rho <= 1)).all()
    fits_somewhere = (prediction.rho > 0).any(axis=1)
    assert (h100.rho[fits_somewhere] > 0).all()  # 80 GB: what fits in 16 GB fits here
    k80_like = estimate_unmeasured(prediction, features, "small", spec=GpuDatasheet(4.0, 200.0, 8, "test"))
    assert (k80_like.rho[~(prediction.rho > 0).all(axis=1)] == 0).all()


def test_unknown_or_measured_types_are_refused(model, held_out):
    prediction = model.predict(held_out[1])
    with pytest.raises(UnknownGpuType, match="no specs for GPU type 'mi300'"):
        estimate_unmeasured(prediction, held_out[1], "mi300")
    with pytest.raises(ValueError, match="has measurements"):
        estimate_unmeasured(prediction, held_out[1], "v100")
    assert np.isfinite(estimate_unmeasured(prediction, held_out[1], "t4").tau)
