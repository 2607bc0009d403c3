"""Limit observations: a job's throughput (and power) measured alone at a GPU power limit (the
default included), as ratios to a reference at the default limit that telemetry never changes,
beside the power-limit model's fractions at that limit. They correct the model per (workload,
type) (catalog/predictors/learnt_limits.py; docs/power_limits.md, "Limit curves learnt from
telemetry").
"""
from django.db import models
from django.db.models import F, Q


class LimitObservation(models.Model):
    workload = models.ForeignKey("catalog.Workload", on_delete=models.CASCADE, related_name="limit_observations")
    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.PROTECT, related_name="limit_observations")
    limit_w = models.FloatField(help_text="The power limit the job's GPUs ran at, W (the default: their default).")
    default_w = models.FloatField(help_text="Their default limit, W.")
    speed_ratio = models.FloatField(
        help_text="Throughput seen over the reference throughput at the default (the catalog's measurement, "
                  "else P1's estimate)."
    )
    model_speed = models.FloatField(help_text="The power-limit model's speed fraction at this limit (1: none).")
    power_ratio = models.FloatField(
        null=True, blank=True, help_text="Power seen over the catalog's power at the default limit, when both known."
    )
    model_power = models.FloatField(null=True, blank=True, help_text="The model's power fraction at this limit.")
    reference = models.CharField(max_length=200, blank=True, help_text="Provenance: the job it was read from.")
    observed_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-observed_at", "-id"]
        indexes = [models.Index(fields=["workload", "gpu_type", "-observed_at"], name="limit_observation_window")]
        constraints = [
            models.CheckConstraint(
                condition=Q(speed_ratio__gt=0) & Q(model_speed__gt=0) & Q(model_speed__lte=1) & Q(limit_w__gt=0)
                & Q(limit_w__lte=F("default_w")),
                name="limit_observation_sane",
            ),
        ]

    def __str__(self):
        return f"{self.workload_id} on {self.gpu_type_id} at {self.limit_w:g} W: {self.speed_ratio:.3f}"
