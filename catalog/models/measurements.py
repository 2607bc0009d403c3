"""Measurements: observed throughput (and power) of a workload on a GPU type.

One row per observation. Reference rows come from published data; profiling rows from
operators' own runs (import_measurements); telemetry rows from running jobs; shadow rows from
shadow mode. A throughput of 0 is a real record: the configuration does not fit.
"""
from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce


class MeasurementSource(models.TextChoices):
    REFERENCE = "reference", "Reference data"
    PROFILING = "profiling", "Profiling"
    TELEMETRY = "telemetry", "Telemetry"
    SHADOW = "shadow", "Shadow mode"


class Measurement(models.Model):
    workload = models.ForeignKey("catalog.Workload", on_delete=models.CASCADE, related_name="measurements")
    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.PROTECT, related_name="measurements")
    num_gpus = models.PositiveSmallIntegerField(default=1, help_text="GPUs of the (data-parallel) job.")
    consolidated = models.BooleanField(
        default=True, help_text="All GPUs on one server (True) or spread across servers (False)."
    )
    partner = models.ForeignKey(
        "catalog.Workload",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Workload sharing the GPU(s); empty when the job ran alone.",
    )
    throughput = models.FloatField(help_text="Steps per second of this workload; 0 = does not fit.")
    partner_throughput = models.FloatField(
        null=True, blank=True, help_text="Steps per second of the partner in the same run, when known."
    )
    power_w = models.FloatField(null=True, blank=True, help_text="Average power of the GPU(s) in W.")
    utilization = models.FloatField(null=True, blank=True, help_text="Average GPU utilization, 0..1.")
    memory_gb = models.FloatField(
        null=True, blank=True, help_text="Peak GPU memory used per GPU in GB (telemetry: the busiest GPU of the job)."
    )
    source = models.CharField(max_length=16, choices=MeasurementSource.choices, db_index=True)
    reference = models.CharField(
        max_length=200, blank=True, help_text="Provenance: data set and key, file:line, or job id."
    )
    observed_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-observed_at", "-id"]
        indexes = [
            models.Index(fields=["workload", "gpu_type", "partner", "-observed_at"], name="measurement_window"),
            # A round's catalog read (predictors_store.catalog_window_records): the distinct
            # configurations in index order, then the newest rows of each, without touching the
            # history behind them. The partner as 0 when alone, so that the configurations can
            # be walked in order (a NULL compares as unknown).
            models.Index(
                F("workload"), F("gpu_type"), F("num_gpus"), F("consolidated"), Coalesce(F("partner"), Value(0)),
                F("observed_at").desc(), F("id"), name="measurement_config_window",
            ),
            # A job's telemetry rows (live pages read the newest observed throughput of each job).
            models.Index(fields=["source", "reference"], name="measurement_reference"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(num_gpus__gte=1),
                name="measurement_gpus_positive",
                violation_error_message="A measurement needs at least 1 GPU.",
            ),
            models.CheckConstraint(
                condition=models.Q(throughput__gte=0),
                name="measurement_throughput_nonneg",
                violation_error_message="Throughput must be >= 0 (0: does not fit).",
            ),
            models.CheckConstraint(
                condition=models.Q(partner_throughput__isnull=True) | models.Q(partner_throughput__gte=0),
                name="measurement_partner_throughput_nonneg",
                violation_error_message="Partner throughput must be >= 0.",
            ),
            models.CheckConstraint(
                condition=models.Q(power_w__isnull=True) | models.Q(power_w__gte=0),
                name="measurement_power_nonneg",
                violation_error_message="Power must be >= 0 W.",
            ),
            models.CheckConstraint(
                condition=models.Q(utilization__isnull=True) | models.Q(utilization__gte=0, utilization__lte=1),
                name="measurement_utilization_unit",
                violation_error_message="Utilization must lie within 0..1.",
            ),
        ]

    def __str__(self):
        partner = f" with {self.partner}" if self.partner_id else ""
        return f"{self.workload} on {self.num_gpus}x{self.gpu_type}{partner}: {self.throughput:.3g}/s"
