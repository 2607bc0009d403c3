"""Sample storage stays bounded: per-minute aggregates past their retention are pruned by the
downsampling beat task (docs/telemetry.md, "Storage"), and an upload writes only its samples."""
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from telemetry import tasks
from telemetry.models import Gpu, GpuSample, GpuSampleMinute, Node
from telemetry.services import gpu_sample_minutes_prune, gpu_samples_ingest

NOW = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def gpu(node1):
    return Gpu.objects.get(node=node1, index=0)


def minute(gpu, ago: timedelta) -> GpuSampleMinute:
    return GpuSampleMinute.objects.create(gpu=gpu, minute=NOW - ago, samples=60, power_w_mean=100.0)


def test_aggregates_older_than_their_retention_are_pruned(gpu):
    old = minute(gpu, timedelta(days=91))
    edge = minute(gpu, timedelta(days=90, seconds=1))
    kept = minute(gpu, timedelta(days=89))
    assert gpu_sample_minutes_prune(retention_s=90 * 86400, now=NOW) == 2
    assert list(GpuSampleMinute.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not GpuSampleMinute.objects.filter(pk__in=[old.pk, edge.pk]).exists()


def test_the_beat_task_prunes_aggregates_with_the_configured_retention(gpu, settings):
    settings.GOGH_TELEMETRY_MINUTE_RETENTION_S = 3600
    settings.GOGH_TELEMETRY_RAW_RETENTION_S = 60
    GpuSampleMinute.objects.create(gpu=gpu, minute=timezone.now() - timedelta(hours=2), samples=60)
    GpuSample.objects.create(gpu=gpu, ts=timezone.now() - timedelta(minutes=10), power_w=1)
    assert tasks.gpu_samples_downsample() == 1  # the raw sample folded, the old aggregate pruned
    assert list(GpuSampleMinute.objects.values_list("power_w_mean", flat=True)) == [1]
    assert "downsample-gpu-samples" in settings.CELERY_BEAT_SCHEDULE


def test_an_unchanged_dropped_count_writes_no_node(gpu, agent):
    def batch(seconds_ago):
        return [{"gpu": gpu.uuid, "ts": timezone.now() - timedelta(seconds=seconds_ago), "power_w": 100.0}]

    gpu_samples_ingest(agent_user=agent, samples=batch(2), dropped=3)
    with CaptureQueriesContext(connection) as queries:
        assert gpu_samples_ingest(agent_user=agent, samples=batch(1), dropped=3) == 1
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert Node.objects.get(pk=gpu.node_id).samples_dropped == 3
