"""/metrics in Prometheus text format, read from the database at scrape time.

GPU metrics carry the labels dcgm-exporter uses (gpu, UUID, device, modelName, Hostname), so
its Grafana dashboards' label filters work on them; the names are GOGH's own (gogh_gpu_*) so
both exporters can feed one Prometheus without clashing. docs/telemetry.md lists them all.
"""
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, Subquery, Sum
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, SummaryMetricFamily

from catalog.models import Measurement, MeasurementSource
from scheduler.lifecycle import JobState
from scheduler.models import Allocation, Job, SolveRun

from .models import Gpu, GpuSample, Node, NodeState
from .services.job_progress import measurement_reference

DCGM_LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "gpu_type"]
_GPU_GAUGES = [
    ("gogh_gpu_power_watts", "Power draw of the GPU in W (DCGM_FI_DEV_POWER_USAGE).", "power_w"),
    ("gogh_gpu_utilization_ratio", "GPU utilization 0..1 (DCGM_FI_DEV_GPU_UTIL / 100).", "utilization"),
    ("gogh_gpu_temperature_celsius", "GPU temperature in C (DCGM_FI_DEV_GPU_TEMP).", "temperature_c"),
    ("gogh_gpu_sm_clock_mhz", "SM clock in MHz (DCGM_FI_DEV_SM_CLOCK).", "sm_clock_mhz"),
    ("gogh_gpu_memory_used_mib", "Frame buffer used in MiB (DCGM_FI_DEV_FB_USED).", "memory_used_mb"),
]


class ControlPlaneCollector:
    """One scrape: the latest sample of every GPU heard from recently, queue, nodes, solver."""

    def __init__(self):
        self.now = timezone.now()

    def collect(self):
        yield from self._gpu_metrics()
        yield from self._job_metrics()
        yield from self._node_metrics()
        yield from self._solve_metrics()
        yield from self._prediction_metrics()

    def _gpu_metrics(self):
        cutoff = self.now - timedelta(seconds=settings.GOGH_TELEMETRY_METRICS_STALE_S)
        latest = GpuSample.objects.filter(gpu=OuterRef("pk"), ts__gte=cutoff).order_by("-ts").values("pk")[:1]
        gpus = list(
            Gpu.objects.select_related("node", "gpu_type").annotate(latest=Subquery(latest)).exclude(latest=None)
        )
        samples = GpuSample.objects.in_bulk([gpu.latest for gpu in gpus])
        families = [(GaugeMetricFamily(name, doc, labels=DCGM_LABELS), field) for name, doc, field in _GPU_GAUGES]
        for gpu in gpus:
            labels = [
                str(gpu.index), gpu.uuid, f"nvidia{gpu.index}", gpu.product_name or gpu.gpu_type.name,
                gpu.node.hostname, gpu.gpu_type.name,
            ]
            for family, field in families:
                value = getattr(samples[gpu.latest], field)
                if value is not None:
                    family.add_metric(labels, value)
        yield from (family for family, _ in families)

    def _job_metrics(self):
        counts = dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())
        family = GaugeMetricFamily("gogh_jobs", "Jobs by state (pending: the queue length).", labels=["state"])
        for state in JobState:
            family.add_metric([state.value], counts.get(state.value, 0))
        yield family

    def _node_metrics(self):
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

    def _solve_metrics(self):
        finished = SolveRun.objects.filter(duration_s__isnull=False)
        totals = finished.aggregate(n=Count("id"), total=Sum("duration_s"))
        yield SummaryMetricFamily(
            "gogh_solve_duration_seconds", "Wall time of scheduling rounds (solve runs).",
            count_value=totals["n"], sum_value=totals["total"] or 0.0,
        )
        last = finished.order_by("-started_at", "-id").first()
        if last is not None:
            gauge = GaugeMetricFamily(
                "gogh_solve_last_duration_seconds", "Wall time of the latest solve run.", labels=["solver", "status"]
            )
            gauge.add_metric([last.solver, last.status], last.duration_s)
            yield gauge

    def _prediction_metrics(self):
        """For running jobs with a predicted throughput (their allocations') and an observed
        one (their latest telemetry measurement): the mean absolute relative prediction error,
        and how many run below their T_min (SLO violations now)."""
        running = {job.pk: job for job in Job.objects.filter(state=JobState.RUNNING.value)}
        predicted = dict(
            Allocation.objects.filter(job_id__in=running, end__isnull=True, predicted_throughput__gt=0)
            .values_list("job_id", "predicted_throughput")
        )
        references = {measurement_reference(pk): pk for pk in running}
        observed = {}
        for reference, throughput in (
            Measurement.objects.filter(source=MeasurementSource.TELEMETRY, reference__in=references)
            .order_by("observed_at", "id")
            .values_list("reference", "throughput")
        ):
            observed[references[reference]] = throughput  # the latest wins
        errors = [abs(observed[pk] - predicted[pk]) / predicted[pk] for pk in observed if pk in predicted]
        error = GaugeMetricFamily(
            "gogh_prediction_abs_error_ratio",
            "Mean |observed - predicted| / predicted throughput over running jobs with both.",
        )
        if errors:
            error.add_metric([], sum(errors) / len(errors))
        yield error
        yield GaugeMetricFamily(
            "gogh_jobs_below_min_throughput", "Running jobs whose latest observed throughput is below their T_min.",
            value=sum(1 for pk, value in observed.items() if value < running[pk].min_throughput),
        )


def render() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ControlPlaneCollector())
    return generate_latest(registry)
