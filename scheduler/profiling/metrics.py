"""Profiling's metric families for /metrics (composed by gogh_web.metrics)."""
from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from catalog.models import GpuType

from ..models import CampaignState, ProfilingCampaign


def profiling_families():
    """Campaigns by state (every state listed), and per GPU type whether GOGH's suite has
    profiled it (1) or its predictions still come from its datasheet or other data (0)."""
    counts = dict(ProfilingCampaign.objects.values_list("state").annotate(n=Count("id")).order_by())
    campaigns = GaugeMetricFamily("gogh_profiling_campaigns", "Profiling campaigns by state.", labels=["state"])
    for state in CampaignState:
        campaigns.add_metric([state.value], counts.get(state.value, 0))
    yield campaigns
    profiled = GaugeMetricFamily(
        "gogh_gpu_type_profiled", "1 when GOGH's benchmark suite has profiled the GPU type, else 0.",
        labels=["gpu_type"],
    )
    for name, at in GpuType.objects.values_list("name", "profiled_at"):
        profiled.add_metric([name], 1 if at else 0)
    yield profiled
