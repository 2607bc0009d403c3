"""Profiling campaigns: GOGH's benchmark suite run on a GPU type, as low-priority jobs.

A campaign starts when a node brings a GPU type without measurements, when an admin asks, or
when a node's GPU driver changes; its jobs run the suite's cases (catalog.profiling) on idle
GPUs of that type and their results become `profiling` measurements. docs/profiling.md.
"""
from django.conf import settings
from django.db import models


class CampaignState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class CampaignTrigger(models.TextChoices):
    NEW_TYPE = "new_type", "A GPU type without measurements"
    ADMIN = "admin", "Asked by an admin"
    DRIVER_CHANGE = "driver_change", "The GPU driver changed"


class ProfilingCampaign(models.Model):
    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.PROTECT, related_name="campaigns")
    state = models.CharField(max_length=16, choices=CampaignState.choices, default=CampaignState.PENDING,
                             db_index=True)
    trigger = models.CharField(max_length=16, choices=CampaignTrigger.choices)
    suite_version = models.CharField(max_length=16)
    driver_version = models.CharField(max_length=40, blank=True)
    cases = models.JSONField(default=list, help_text="The suite cases to run, by name.")
    cases_done = models.JSONField(default=list, blank=True, help_text="Cases measured.")
    failures = models.JSONField(
        default=list, blank=True, help_text="[{case, kind (oom, error, timeout), message}] of cases that failed."
    )
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    message = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["gpu_type"], condition=models.Q(state__in=["pending", "running"]),
                name="one_open_campaign_per_gpu_type",
            ),
        ]

    def __str__(self):
        return f"profiling {self.gpu_type} ({self.state})"
