"""Admin of profiling campaigns: read-only records (the services write them as results come
in), and the GPU types' action that starts one (trigger admin). The catalog's GPU type admin is
extended here, not in the catalog, which knows nothing of the scheduler."""
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from catalog.admin import GpuTypeAdmin
from catalog.models import GpuType
from gogh_web.admin_display import RecordAdmin

from ..models import CampaignTrigger, ProfilingCampaign
from .services import CampaignOpen, campaign_cancel, campaign_start


@admin.register(ProfilingCampaign)
class ProfilingCampaignAdmin(RecordAdmin):
    list_display = ["id", "gpu_type", "state", "trigger", "progress", "suite_version", "driver_version", "created_at",
                    "finished_at"]
    list_filter = ["state", "trigger", "gpu_type"]
    list_select_related = ["gpu_type"]
    date_hierarchy = "created_at"
    fields = ["gpu_type", "state", "trigger", "suite_version", "driver_version", "requested_by", "message", "cases",
              "cases_done", "failures", "created_at", "started_at", "finished_at"]
    readonly_fields = fields

    actions = ["cancel"]

    def has_cancel_permission(self, request):
        """Stopping a campaign changes it: the change permission (superusers, or granted)."""
        return request.user.has_perm("scheduler.change_profilingcampaign")

    @admin.action(description="Cancel selected campaigns (and their unfinished jobs)", permissions=["cancel"])
    def cancel(self, request, queryset):
        cancelled, refused = [], []
        for campaign in queryset:
            try:
                campaign_cancel(campaign=campaign, by=request.user)
                cancelled.append(str(campaign.pk))
            except ValidationError as exc:
                refused.append(f"campaign {campaign.pk}: {' '.join(exc.messages)}")
        if cancelled:
            self.message_user(request, f"Cancelled campaign(s) {', '.join(cancelled)}.", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not cancelled: " + " ".join(refused), messages.WARNING)

    @admin.display(description="Cases")
    def progress(self, campaign):
        """Measured and failed of all, e.g. "12 + 2 failed of 26"."""
        return f"{len(campaign.cases_done)} + {len(campaign.failures)} failed of {len(campaign.cases)}"


admin.site.unregister(GpuType)


@admin.register(GpuType)
class ProfiledGpuTypeAdmin(GpuTypeAdmin):
    list_display = [*GpuTypeAdmin.list_display, "profiled_at"]
    readonly_fields = [*GpuTypeAdmin.readonly_fields, "profiled_at", "profiled_suite_version",
                       "profiled_driver_version"]
    actions = ["profile"]

    @admin.action(description="Profile selected GPU types (run the benchmark suite)", permissions=["change"])
    def profile(self, request, queryset):
        started, refused = [], []
        for gpu_type in queryset:
            try:
                campaign_start(gpu_type=gpu_type, trigger=CampaignTrigger.ADMIN, requested_by=request.user)
                started.append(gpu_type.name)
            except CampaignOpen as exc:
                refused.append(str(exc))
            except ValidationError as exc:
                refused.append(f"{gpu_type.name}: {' '.join(exc.messages)}")
        if started:
            self.message_user(request, f"Profiling campaign started for {', '.join(started)}.", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not started: " + " ".join(refused), messages.WARNING)
