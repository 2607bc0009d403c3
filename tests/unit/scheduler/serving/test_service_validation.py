"""The pure rules for a service that cannot be created (validation.service_problems), by hand:
a batch of 8 on a GPU at 10 steps/s answers in at least 1000 x (1/10 + ln(100)/80) = 157.6 ms
with no load, 189.1 ms with the SLO margin 0.2."""
from scheduler.serving.validation import MAX_BATCH_SIZE, MAX_REPLICAS, service_problems

FASTEST = ("A100", 10.0)


def _data(**over):
    return {"min_replicas": 1, "max_replicas": 2, "batch_size": 8, "expected_rate_rps": 5.0,
            "latency_bound_ms": 200.0, **over}


def test_a_bound_above_the_fastest_gpus_unloaded_floor_with_the_margin_is_accepted():
    assert service_problems(_data(), FASTEST, 0.2) == {}


def test_a_bound_below_the_floor_with_the_margin_names_the_fastest_type_and_the_floor():
    problems = service_problems(_data(latency_bound_ms=180.0), FASTEST, 0.2)
    assert list(problems) == ["latency_bound_ms"]
    assert "A100" in problems["latency_bound_ms"][0] and "189 ms" in problems["latency_bound_ms"][0]
    # Without the margin the same bound is above the floor (157.6 ms).
    assert service_problems(_data(latency_bound_ms=180.0), FASTEST, 0.0) == {}


def test_an_unknown_fastest_gpu_leaves_the_bound_unchecked():
    assert service_problems(_data(latency_bound_ms=1.0), None, 0.2) == {}


def test_min_replicas_above_max_is_named_on_both_fields():
    problems = service_problems(_data(min_replicas=3, max_replicas=2), FASTEST, 0.2)
    assert set(problems) == {"min_replicas", "max_replicas"}
    assert "above max_replicas (2)" in problems["min_replicas"][0]


def test_out_of_range_numbers_each_name_their_field():
    problems = service_problems(
        _data(min_replicas=0, max_replicas=MAX_REPLICAS + 1, batch_size=MAX_BATCH_SIZE + 1,
              expected_rate_rps=float("nan"), latency_bound_ms=-1.0),
        FASTEST, 0.2,
    )
    assert set(problems) == {"min_replicas", "max_replicas", "batch_size", "expected_rate_rps", "latency_bound_ms"}
