"""Reads of profiling campaigns."""
from ..models import ProfilingCampaign


def campaign_list():
    """Every campaign, newest first, with its type and requester loaded and its jobs' ids."""
    return ProfilingCampaign.objects.select_related("gpu_type", "requested_by").prefetch_related("jobs")
