"""A round reads only the catalog policy's windows (the newest GOGH_PREDICTOR_WINDOW rows of each
configuration), with the same result as the policy applied to every measurement ever stored."""
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Measurement
from catalog.predictors.data import CatalogPolicy, apply_policy
from catalog.services.predictors_store import catalog_records, catalog_window_records
from scheduler import problem_source

WINDOW = 5


@pytest.fixture
def history(resnet50, lm, v100, k80):
    """Twelve rows or more in each configuration (alone on 1 GPU, on 2 GPUs spread, beside a
    partner), a configuration with fewer rows than the window, telemetry outliers inside the
    windows, reference and profiling rows, rows observed at the same instant across the window's
    edge, all inserted out of time order (ids do not follow time). Returns its configurations."""
    rng = random.Random(3)
    now = timezone.now()
    configurations = [
        (resnet50, v100, 1, True, None, 10.0), (resnet50, v100, 2, False, None, 17.0),
        (resnet50, k80, 1, True, lm, 3.0), (lm, v100, 1, True, None, 30.0), (lm, k80, 1, True, resnet50, 12.0),
    ]
    rows = []
    for workload, gpu_type, num_gpus, consolidated, partner, tau in configurations:
        for n in range(14):
            minutes = n if n not in (4, 5, 6) else 4  # three rows at the fifth newest instant
            rows.append(Measurement(
                workload=workload, gpu_type=gpu_type, num_gpus=num_gpus, consolidated=consolidated, partner=partner,
                throughput=tau * (8.0 if n in (1, 9) else rng.uniform(0.95, 1.05)),
                source="profiling" if n == 12 else "reference" if n == 13 else "telemetry",
                observed_at=now - timedelta(minutes=minutes), power_w=rng.choice([None, 200.0 + n]),
                utilization=rng.choice([None, 0.9]), memory_gb=rng.choice([None, 4.0 + n]),
            ))
    rows += [Measurement(workload=lm, gpu_type=v100, num_gpus=4, consolidated=True, throughput=90.0 + n,
                         source="telemetry", observed_at=now - timedelta(minutes=n)) for n in range(3)]
    rng.shuffle(rows)
    Measurement.objects.bulk_create(rows)
    return configurations


@pytest.mark.parametrize("window", [1, WINDOW, 100])
def test_the_windowed_read_gives_the_policy_the_same_groups_as_the_whole_history(history, window):
    policy = CatalogPolicy(window=window, min_samples=3)
    windowed = catalog_window_records(window)
    assert apply_policy(windowed, policy) == apply_policy(catalog_records(), policy)
    assert len(windowed) == 5 * min(window, 14) + min(window, 3)


def test_a_round_hands_the_policy_only_the_windows_in_as_many_queries_however_long_the_history(
        history, settings, monkeypatch, resnet50, v100):
    settings.GOGH_PREDICTOR_WINDOW = WINDOW
    policy = CatalogPolicy(window=WINDOW, min_samples=settings.GOGH_PREDICTOR_MIN_SAMPLES)
    seen = []

    def spy(records, used):
        seen.append(len(records))
        return apply_policy(records, used)

    monkeypatch.setattr(problem_source, "apply_policy", spy)
    with CaptureQueriesContext(connection) as short:
        groups = problem_source.policy_groups()
    assert groups == apply_policy(catalog_records(), policy)
    older = timezone.now() - timedelta(days=30)
    Measurement.objects.bulk_create(
        Measurement(workload=resnet50, gpu_type=v100, throughput=1.0 + n % 7, source="telemetry",
                    observed_at=older - timedelta(seconds=n))
        for n in range(500)
    )
    with CaptureQueriesContext(connection) as long:
        assert problem_source.policy_groups() == groups  # the old rows lie behind the window
    assert seen == [5 * WINDOW + 3] * 2
    assert len(long) == len(short)
