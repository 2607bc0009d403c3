"""Admin for the catalog: operators correct GPU types and workloads, and browse measurements.

The measurements table holds ~11k reference rows and grows with telemetry, so foreign keys use
autocomplete widgets (no select box of every workload) and the list skips the full count.
"""
from django.contrib import admin

from .models import GpuType, Measurement, Workload


@admin.register(GpuType)
class GpuTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "memory_gb", "tdp_w", "idle_w", "updated_at"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "family", "batch_size", "kind", "description"]
    list_filter = ["kind", "family"]
    search_fields = ["name", "family", "description"]
    readonly_fields = ["created_at"]


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = [
        "workload", "gpu_type", "num_gpus", "consolidated", "partner", "throughput", "partner_throughput",
        "power_w", "utilization", "source", "observed_at",
    ]
    list_filter = ["source", "gpu_type", "num_gpus", "consolidated"]
    list_select_related = ["workload", "gpu_type", "partner"]
    search_fields = ["workload__name", "reference"]
    autocomplete_fields = ["workload", "gpu_type", "partner"]
    date_hierarchy = "observed_at"
    readonly_fields = ["created_at"]
    show_full_result_count = False
