"""Admin for the catalog: operators correct GPU types and workloads, and browse measurements.

The measurements table holds ~11k reference rows and grows with telemetry, so foreign keys use
autocomplete widgets (no select box of every workload) and the list skips the full count.
"""
from django.contrib import admin, messages
from django.db import models

from gogh_web.admin_display import figures, rounded
from gogh_web.api.poison import PoisonFreeJSONFormField

from .models import GpuType, Measurement, PredictionRecord, PredictorVersion, Workload
from .services.predictors import predictor_rollback

#: JSON columns edited here refuse NUL and lone surrogates, as the API does.
_JSON_WITHOUT_POISON = {models.JSONField: {"form_class": PoisonFreeJSONFormField}}


@admin.register(GpuType)
class GpuTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "memory_gb", "tdp_w", "idle_w", "updated_at"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at", "updated_at"]
    formfield_overrides = _JSON_WITHOUT_POISON


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "family", "batch_size", "kind", "description"]
    list_filter = ["kind", "family"]
    search_fields = ["name", "family", "description"]
    readonly_fields = ["created_at"]
    formfield_overrides = _JSON_WITHOUT_POISON


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = [
        "workload", "gpu_type", "num_gpus", "consolidated", "partner", rounded(Measurement, "throughput"),
        rounded(Measurement, "partner_throughput"), rounded(Measurement, "power_w"),
        rounded(Measurement, "utilization"), "source", "observed_at",
    ]
    list_filter = ["source", "gpu_type", "num_gpus", "consolidated"]
    list_select_related = ["workload", "gpu_type", "partner"]
    search_fields = ["workload__name", "reference"]
    autocomplete_fields = ["workload", "gpu_type", "partner"]
    date_hierarchy = "observed_at"
    readonly_fields = ["created_at"]
    show_full_result_count = False


@admin.register(PredictorVersion)
class PredictorVersionAdmin(admin.ModelAdmin):
    """Versions are made by training and import (services); the admin reads them and rolls back."""

    list_display = ["id", "name", "architecture", "status", "validation_mae", "promotion", "created_at", "note"]
    list_filter = ["name", "status", "architecture"]
    readonly_fields = [f.name for f in PredictorVersion._meta.fields]
    actions = ["roll_back"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="Val MAE")
    def validation_mae(self, version):
        mae = version.val_mae
        return None if mae is None else figures(mae)

    @admin.display(description="Promotion")
    def promotion(self, version):
        """Why a candidate stayed one (its scores and the active version's), or "promoted"."""
        outcome = version.metrics.get("promotion") or {}
        return outcome.get("reason") or ("promoted" if outcome.get("promoted") else "")

    @admin.action(description="Roll back to the selected version (make it active)")
    def roll_back(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to roll back to.", messages.ERROR)
            return
        version = predictor_rollback(version=queryset.get())
        self.message_user(request, f"{version} is now active.", messages.SUCCESS)


@admin.register(PredictionRecord)
class PredictionRecordAdmin(admin.ModelAdmin):
    list_display = ["id", "workload", "job_id", "version", "shadow", "created_at"]
    list_filter = ["shadow"]
    list_select_related = ["workload", "version"]
    readonly_fields = [f.name for f in PredictionRecord._meta.fields]

    def has_add_permission(self, request):
        return False
