"""What the Cluster and Predictions pages compute: energy today, power now, catalog coverage."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement, PredictionRecord, PredictorVersion
from gogh_web.dashboard import selectors
from scheduler.models import Allocation, Job, JobMeasurement, SolveRun
from telemetry.models import Gpu, GpuSample, GpuSampleMinute, GpuState, Node


def test_energy_today_adds_raw_spans_and_minute_aggregates(cluster):
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    gpu = cluster[0]
    for s in range(61):  # one minute at 200 W, one sample a second
        GpuSample.objects.create(gpu=gpu, ts=now - timedelta(seconds=60 - s), power_w=200.0)
    GpuSampleMinute.objects.create(gpu=gpu, minute=now - timedelta(hours=1), samples=60, power_w_mean=300.0)
    GpuSampleMinute.objects.create(gpu=gpu, minute=now - timedelta(days=1), samples=60, power_w_mean=999.0)  # yesterday
    assert selectors.energy_today_wh(now=now) == pytest.approx((200 * 60 + 300 * 60) / 3600)


def test_energy_today_integrates_real_timestamps_and_caps_outages(cluster, settings):
    """An agent sampling every 0.5 s, with a 10-minute outage: each reading holds until the next
    one for at most the staleness bound; a minute aggregate of 120 samples is still one minute."""
    settings.GOGH_TELEMETRY_METRICS_STALE_S = 10.0
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    gpu = cluster[0]
    for start in (now - timedelta(minutes=20), now - timedelta(minutes=9)):  # 60 s each, then silence
        GpuSample.objects.bulk_create(
            GpuSample(gpu=gpu, ts=start + timedelta(seconds=i / 2), power_w=200.0) for i in range(121)
        )
    GpuSampleMinute.objects.create(gpu=gpu, minute=now - timedelta(hours=2), samples=120, power_w_mean=300.0)
    # 60 s + 10 s (the outage, capped) + 60 s + 10 s (the silence until now, capped) at 200 W; 60 s at 300 W
    assert selectors.energy_today_wh(now=now) == pytest.approx((200 * (60 + 10 + 60 + 10) + 300 * 60) / 3600)


def test_energy_today_holds_each_reading_until_the_next_of_its_own_gpu(cluster):
    """Two GPUs sampled in turn: a reading of one GPU is not cut short by the other's."""
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    start = now - timedelta(seconds=40)
    GpuSample.objects.bulk_create(
        [GpuSample(gpu=cluster[0], ts=start + timedelta(seconds=2 * i), power_w=100.0) for i in range(20)]
        + [GpuSample(gpu=cluster[1], ts=start + timedelta(seconds=2 * i + 1), power_w=300.0) for i in range(20)]
    )
    # GPU 0: 40 s at 100 W; GPU 1: 39 s at 300 W (from its first reading until now)
    assert selectors.energy_today_wh(now=now) == pytest.approx((100 * 40 + 300 * 39) / 3600)


def test_cluster_overview_follows_the_staleness_setting(cluster, settings):
    now = timezone.now()
    GpuSample.objects.create(gpu=cluster[0], ts=now - timedelta(seconds=30), power_w=150.0)
    assert selectors.cluster_overview(now=now)["power_now_w"] == 150.0
    settings.GOGH_TELEMETRY_METRICS_STALE_S = 20.0
    overview = selectors.cluster_overview(now=now)
    assert overview["power_now_w"] == 0 and overview["stale_s"] == 20.0


def test_cluster_overview_is_the_live_snapshots_nodes_and_gpus(cluster):
    from gogh_web.events.selectors import Viewer, snapshot

    Gpu.objects.filter(pk=cluster[1].pk).update(state="missing")
    Node.objects.create(hostname="gpu-b")
    overview = selectors.cluster_overview()
    state = snapshot(Viewer(staff=True, tenant_id=None))["state"]
    assert overview["nodes"] == sorted(state["node"].values(), key=lambda n: n["hostname"])
    assert overview["gpus"] == sorted(state["gpu"].values(), key=lambda g: g["index"])
    assert [n["gpu_count"] for n in overview["nodes"]] == [1, 0]  # the missing GPU is not counted
    assert overview["gpus_by_type"] == {"v100": {"healthy": 1, "missing": 1}}


def test_recent_solve_runs_are_the_live_window_by_id(db, settings):
    from gogh_web.events.selectors import Viewer, snapshot

    settings.GOGH_LIVE_SOLVE_RUNS_KEPT = 3
    now = timezone.now()
    for i in range(5):  # started_at in the reverse order of the ids
        run = SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal")
        SolveRun.objects.filter(pk=run.pk).update(started_at=now - timedelta(minutes=i))
    runs = selectors.recent_solve_runs()
    newest = list(SolveRun.objects.order_by("-id").values_list("pk", flat=True)[:3])
    assert [r["id"] for r in runs] == newest
    assert {str(r["id"]): r for r in runs} == snapshot(Viewer(staff=True, tenant_id=None))["state"]["solve_run"]


def test_power_now_counts_only_fresh_samples(cluster):
    now = timezone.now()
    GpuSample.objects.create(gpu=cluster[0], ts=now - timedelta(seconds=5), power_w=150.0, utilization=0.5)
    GpuSample.objects.create(gpu=cluster[1], ts=now - timedelta(hours=1), power_w=999.0)
    overview = selectors.cluster_overview(now=now)
    assert overview["power_now_w"] == 150.0
    assert [g["utilization"] for g in overview["gpus"]] == [0.5, None]


def test_coverage_marks_measured_and_unknown_cells(cluster, resnet50, lm, v100):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, partner=lm, throughput=2.0, source="reference",
                               observed_at=timezone.now())
    coverage = selectors.catalog_coverage()
    assert coverage["workloads"] == [lm.name, resnet50.name]
    assert coverage["partners"] == ["(alone)", lm.name, resnet50.name]
    lm_row, resnet_row = coverage["by_type"]["v100"]
    assert resnet_row == [selectors.MEASURED, selectors.MEASURED, selectors.UNKNOWN]
    assert lm_row == [selectors.UNKNOWN] * 3


def test_coverage_lists_the_gpu_types_the_cluster_has_first(cluster, resnet50, v100, k80):
    """The page opens on the first type listed: one the cluster has (k80 sorts first but no GPU
    here is one; a missing GPU does not count)."""
    node = cluster[0].node
    Gpu.objects.create(node=node, index=5, uuid="GPU-gone", gpu_type=k80, state=GpuState.MISSING)
    coverage = selectors.catalog_coverage()
    assert coverage["types"] == ["v100", "k80"]
    assert coverage["in_cluster"] == ["v100"]
    assert set(coverage["by_type"]) == {"v100", "k80"}


def test_coverage_marks_cells_a_stored_estimate_predicts(cluster, resnet50, lm, v100):
    version = PredictorVersion.objects.create(name="p1", architecture="feedforward", weights_file="p1.pt",
                                              weights_sha256="0" * 64, metrics={"val_mae": 0.09})
    PredictionRecord.objects.create(workload=lm, version=version, estimates={
        "partners": [resnet50.name], "gpu_types": ["v100"], "rho": [[0.8]], "configs": [["v100", 1, True]],
        "tau": [3.0], "low_confidence": True,
    })
    lm_row, _ = selectors.catalog_coverage()["by_type"]["v100"]
    assert lm_row == [selectors.PREDICTED, selectors.UNKNOWN, selectors.PREDICTED]  # alone, with LM, with ResNet
    assert selectors.validation_mae_series() == {"p1": [(version.created_at.isoformat(), 0.09)]}


def test_live_prediction_error_of_a_running_job(alice, cluster, submit, resnet50, v100):
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(state="running", pending_reason="")
    Allocation.objects.create(
        job=job, gpu=cluster[0], start=timezone.now(), predicted_throughput=4.0, predicted_power_w=250
    )
    measurement = Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=3.0, source="telemetry",
                                             reference=f"telemetry: job {job.pk}", observed_at=timezone.now())
    JobMeasurement.objects.create(job=job, measurement=measurement)
    (row,) = selectors.live_prediction_errors(alice)
    assert (row["id"], row["predicted"], row["observed"], row["confidence"]) == (job.pk, 4.0, 3.0, "catalog")
    assert row["error"] == pytest.approx(-0.25)
