"""simulate's policies keep, per workload and GPU type, the draw its power readings are read
against (the first one given: fixed) and the utilization telemetry saw (draws.LearntDraws)."""
import pytest

from scheduler.simulation.draws import LearntDraws

W = "ResNet-18 (batch size 32)"


def test_the_first_reference_is_kept_and_utilization_is_the_mean():
    draws = LearntDraws()
    assert draws.reference(W, "v100") is None and draws.utilization(W, "v100") is None
    draws.observe(W, "v100", 300.0, 0.9)
    draws.observe(W, "v100", 250.0, 0.8)  # a later plan's draw does not move what readings were read against
    assert draws.reference(W, "v100") == 300.0
    assert draws.utilization(W, "v100") == pytest.approx(0.85)
    assert draws.reference(W, "k80") is None and draws.utilization("other", "v100") is None


def test_what_no_gpu_reports_is_not_kept():
    draws = LearntDraws()
    for reference_w, utilization in ((None, None), (0.0, -0.1), (-5.0, 1.5)):
        draws.observe(W, "v100", reference_w, utilization)
    assert draws.reference(W, "v100") is None and draws.utilization(W, "v100") is None
    draws.observe(W, "v100", None, 0.7)  # a window without a reference still has its utilization
    assert draws.reference(W, "v100") is None and draws.utilization(W, "v100") == 0.7
