"""Workloads: what a job runs (model x batch size), with the features P1 learns from."""
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class WorkloadKind(models.TextChoices):
    TRAINING = "training", "Training"
    INFERENCE = "inference", "Inference"


class Workload(models.Model):
    """A workload such as 'ResNet-50 (batch size 64)'.

    Features are optional (a new workload may arrive with none) and each one's source is kept
    in `provenance`, so a predictor can tell a published figure from an operator's guess.
    """

    name = models.CharField(max_length=120, unique=True)
    family = models.CharField(max_length=60, db_index=True, help_text="Model family, e.g. ResNet-50.")
    batch_size = models.PositiveIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=WorkloadKind.choices, default=WorkloadKind.TRAINING)
    description = models.CharField(max_length=300, blank=True)
    parameters = models.BigIntegerField(null=True, blank=True, help_text="Trainable parameters.")
    flops_per_sample = models.FloatField(null=True, blank=True, help_text="Forward+backward FLOPs per sample.")
    compute_density = models.FloatField(null=True, blank=True, help_text="0..1, share of time compute-bound.")
    memory_intensity = models.FloatField(null=True, blank=True, help_text="0..1, memory-access intensity.")
    communication_overhead = models.FloatField(
        null=True, blank=True, help_text="0..1, share of a data-parallel step spent communicating."
    )
    restart_overhead_s = models.FloatField(
        default=30.0, validators=[MinValueValidator(0), MaxValueValidator(86400)],
        help_text=(
            "Seconds a restart costs before the job progresses again (start, load the checkpoint, warm up): "
            "the rounds' default until restarts of this workload are measured."
        ),
    )
    provenance = models.JSONField(default=dict, blank=True, help_text="{feature: source} for each value.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["family", "batch_size", "name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    (models.Q(compute_density__isnull=True) | models.Q(compute_density__gte=0, compute_density__lte=1))
                    & (
                        models.Q(memory_intensity__isnull=True)
                        | models.Q(memory_intensity__gte=0, memory_intensity__lte=1)
                    )
                    & (
                        models.Q(communication_overhead__isnull=True)
                        | models.Q(communication_overhead__gte=0, communication_overhead__lte=1)
                    )
                ),
                name="workload_features_in_unit_range",
                violation_error_message=(
                    "Compute density, memory intensity and communication overhead must lie within 0..1."
                ),
            ),
        ]

    def __str__(self):
        return self.name
