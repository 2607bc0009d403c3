import pytest


@pytest.fixture
def ranker_data(resnet50):
    """A service body that the measured cluster (ResNet-50 at 10 steps/s on a V100) can serve:
    batches of 64, P99 <= 500 ms (one replica answers about 528 requests/s at 85 % of a V100)."""
    return {"name": "ranker", "workload": resnet50, "latency_bound_ms": 500.0, "min_replicas": 1,
            "max_replicas": 4, "batch_size": 64, "expected_rate_rps": 100.0}


@pytest.fixture
def without_rate_headroom(monkeypatch):
    """Plans for exactly the rate reported: the hand-derived replica counts and T_min of the tests
    that use it stay readable. The headroom (replicas.RATE_HEADROOM) is tested in
    test_latency_model.py, on the plan every caller gets."""
    monkeypatch.setattr("scheduler.serving.replicas.RATE_HEADROOM", 0.0)
