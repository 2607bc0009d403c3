"""The inventory's metric families for /metrics (composed with the other apps' by
gogh_web.metrics), read from the database at scrape time.

GPU metrics carry the labels dcgm-exporter uses (gpu, UUID, device, modelName, Hostname), so
its Grafana dashboards' label filters work on them; the names are GOGH's own (gogh_gpu_*) so
both exporters can feed one Prometheus without clashing. docs/telemetry.md lists them all.
"""
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, Subquery
from prometheus_client.core import GaugeMetricFamily

from .models import Gpu, GpuPowerCurve, GpuSample, Node, NodeState

DCGM_LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "gpu_type"]
_GPU_GAUGES = [
    ("gogh_gpu_power_watts", "Power draw of the GPU in W (DCGM_FI_DEV_POWER_USAGE).", "power_w"),
    ("gogh_gpu_utilization_ratio", "GPU utilization 0..1 (DCGM_FI_DEV_GPU_UTIL / 100).", "utilization"),
    ("gogh_gpu_temperature_celsius", "GPU temperature in C (DCGM_FI_DEV_GPU_TEMP).", "temperature_c"),
    ("gogh_gpu_sm_clock_mhz", "SM clock in MHz (DCGM_FI_DEV_SM_CLOCK).", "sm_clock_mhz"),
    ("gogh_gpu_memory_used_mib", "Frame buffer used in MiB (DCGM_FI_DEV_FB_USED).", "memory_used_mb"),
]


def gpu_families(now):
    """The latest sample of every GPU heard from in the last GOGH_TELEMETRY_METRICS_STALE_S."""
    cutoff = now - timedelta(seconds=settings.GOGH_TELEMETRY_METRICS_STALE_S)
    latest = GpuSample.objects.filter(gpu=OuterRef("pk"), ts__gte=cutoff).order_by("-ts").values("pk")[:1]
    gpus = list(
        Gpu.objects.select_related("node", "gpu_type").annotate(latest=Subquery(latest)).exclude(latest=None)
    )
    samples = GpuSample.objects.in_bulk([gpu.latest for gpu in gpus])
    families = [(GaugeMetricFamily(name, doc, labels=DCGM_LABELS), field) for name, doc, field in _GPU_GAUGES]
    for gpu in gpus:
        labels = _labels(gpu)
        for family, field in families:
            value = getattr(samples[gpu.latest], field)
            if value is not None:
                family.add_metric(labels, value)
    yield from (family for family, _ in families)


def board_families():
    """Each GPU's own speed, slow flag, health (at risk, throttled), power limit in force and
    power-curve residual (docs/gpu_health.md), for every registered GPU, whether or not it sampled lately: these
    change with jobs and fits, not with each sample."""
    speed = GaugeMetricFamily("gogh_gpu_speed_factor", "Throughput over its type's other boards' doing the same "
                              "work, learnt from its jobs (1: as fast).", labels=DCGM_LABELS)
    slow = GaugeMetricFamily("gogh_gpu_slow", "1 where the board is flagged as drifting slower.", labels=DCGM_LABELS)
    limit = GaugeMetricFamily("gogh_gpu_power_limit_watts", "Power limit in force, as last reported, W.",
                              labels=DCGM_LABELS)
    notes = GaugeMetricFamily("gogh_gpu_health_notes", "Health signals that warn (throttling for heat or the power "
                              "brake, high temperature, rising error counts).", labels=DCGM_LABELS)
    at_risk = GaugeMetricFamily("gogh_gpu_at_risk", "1 where uncorrectable ECC errors, retired pages or remapped "
                                "rows rose since the board was first seen: planned like a slow board.",
                                labels=DCGM_LABELS)
    throttled = GaugeMetricFamily("gogh_gpu_throttled_speed", "The speed a board braked for heat or power is "
                                  "planned at (its SM clock over its maximum), where it is.", labels=DCGM_LABELS)
    residual = GaugeMetricFamily("gogh_gpu_power_curve_residual_watts", "Spread of the samples around the board's "
                                 "fitted power curve, W.", labels=DCGM_LABELS)
    curves = dict(GpuPowerCurve.objects.values_list("gpu_id", "residual_std_w"))
    for gpu in Gpu.objects.select_related("node", "gpu_type"):
        labels = _labels(gpu)
        speed.add_metric(labels, gpu.speed_factor)
        slow.add_metric(labels, 1 if gpu.speed_flag else 0)
        notes.add_metric(labels, len(gpu.health.get("notes", ())))
        at_risk.add_metric(labels, 1 if gpu.health.get("at_risk") else 0)
        if "throttled_speed" in gpu.health:
            throttled.add_metric(labels, gpu.health["throttled_speed"])
        if gpu.power_limit_w is not None:
            limit.add_metric(labels, gpu.power_limit_w)
        if gpu.pk in curves:
            residual.add_metric(labels, curves[gpu.pk])
    yield from (speed, slow, limit, notes, at_risk, throttled, residual)


def _labels(gpu: Gpu) -> list[str]:
    return [
        str(gpu.index), gpu.uuid, f"nvidia{gpu.index}", gpu.product_name or gpu.gpu_type.name,
        gpu.node.hostname, gpu.gpu_type.name,
    ]


def node_families():
    """Nodes by state, and the samples their agents dropped."""
    counts = dict(Node.objects.values_list("state").annotate(n=Count("id")).order_by())
    family = GaugeMetricFamily("gogh_nodes", "Nodes by state.", labels=["state"])
    for state in NodeState:
        family.add_metric([state.value], counts.get(state.value, 0))
    yield family
    dropped = GaugeMetricFamily(
        "gogh_agent_samples_dropped", "Samples the node's agent dropped from its full buffer (as reported).",
        labels=["Hostname"],
    )
    for hostname, count in Node.objects.filter(samples_dropped__gt=0).values_list("hostname", "samples_dropped"):
        dropped.add_metric([hostname], count)
    yield dropped
