"""The live kind `gpu_type_profile` (docs/live-updates.md): per GPU type, whether the catalog
knows it from GOGH's suite (profiled), is measuring it (profiling, k of n cases), knows it from
other measurements only (measured), or from its datasheet only (datasheet). Cluster-wide."""
from functools import partial

from catalog.models import GpuType, Measurement
from gogh_web.events.sending import send_event
from gogh_web.events.state import iso

from ..models import CampaignState, ProfilingCampaign

PROFILED, PROFILING, MEASURED, DATASHEET = "profiled", "profiling", "measured", "datasheet"
_OPEN = (CampaignState.PENDING, CampaignState.RUNNING)


def profile_state(gpu_type, *, campaign, measured: bool) -> dict:
    """A GPU type (`campaign`: its open campaign or None; `measured`: the catalog has rows of it)."""
    if campaign is not None:
        status = PROFILING
    elif gpu_type.profiled_at:
        status = PROFILED
    else:
        status = MEASURED if measured else DATASHEET
    settled = len(set(campaign.cases_done) | {f["case"] for f in campaign.failures}) if campaign else None
    return {
        "gpu_type": gpu_type.name,
        "status": status,
        "campaign_id": campaign.pk if campaign else None,
        "cases": len(campaign.cases) if campaign else None,
        "cases_settled": settled,
        "cases_failed": len(campaign.failures) if campaign else None,
        "profiled_at": iso(gpu_type.profiled_at),
        "suite_version": gpu_type.profiled_suite_version,
        "driver_version": gpu_type.profiled_driver_version,
    }


def profile_label(profile: dict) -> str:
    """What the Cluster page says of a type (cluster.js says the same of the live dicts)."""
    if profile["status"] == PROFILING:
        return f"profiling {profile['cases_settled']} of {profile['cases']} cases"
    return {PROFILED: "profiled", MEASURED: "measured, not profiled", DATASHEET: "datasheet only"}[profile["status"]]


def profiles_data(types) -> dict[str, dict]:
    types = list(types)
    campaigns = {c.gpu_type_id: c for c in ProfilingCampaign.objects.filter(gpu_type__in=types, state__in=_OPEN)}
    measured = set(Measurement.objects.filter(gpu_type__in=types).values_list("gpu_type_id", flat=True).distinct())
    return {
        t.name: profile_state(t, campaign=campaigns.get(t.pk), measured=t.pk in measured) for t in types
    }


def profile_data(name: str) -> dict | None:
    return profiles_data(GpuType.objects.filter(name=name)).get(name)


def gpu_type_profiles_snapshot(viewer) -> dict[str, dict]:
    """Every GPU type, for every viewer."""
    return profiles_data(GpuType.objects.all())


def gpu_type_profile_changed(name: str) -> None:
    """A campaign of the type moved (or the type was profiled): an event, built after the commit."""
    send_event(kind="gpu_type_profile", key=name, data=partial(profile_data, name))
