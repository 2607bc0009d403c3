"""Versions of the trained predictors, and the predictions they made for jobs.

Every trained model is an artifact: its state_dict lives in a file under var/predictors/
(checked by sha256 when loaded, read with torch.load(..., weights_only=True)) and this row
keeps what it is, what it was trained on and how well it scored, so a candidate can be
compared with the active version and the admin can roll back.
"""
from django.db import models


class PredictorName(models.TextChoices):
    P1 = "p1", "P1 (initial estimate)"
    P2 = "p2", "P2 (online refinement)"


class PredictorStatus(models.TextChoices):
    CANDIDATE = "candidate", "Candidate"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class PredictorVersion(models.Model):
    name = models.CharField(max_length=8, choices=PredictorName.choices)
    architecture = models.CharField(max_length=32)
    hyperparameters = models.JSONField(default=dict, blank=True)
    training_data = models.JSONField(default=dict, blank=True, help_text="Snapshot of what it was trained on.")
    metrics = models.JSONField(default=dict, blank=True, help_text="val_mae (rho), train_mae, iso_mape, ...")
    weights_file = models.CharField(max_length=255, help_text="Path under var/predictors/.")
    weights_sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=PredictorStatus.choices, default=PredictorStatus.CANDIDATE)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Imported or earlier weights this version was fine-tuned from.",
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(status="active"),
                name="one_active_predictor_per_name",
                violation_error_message="Only one version of a predictor can be active.",
            ),
        ]

    def __str__(self):
        return f"{self.name} {self.architecture} #{self.pk} ({self.status})"

    @property
    def val_mae(self) -> float | None:
        return self.metrics.get("val_mae")


class PredictionRecord(models.Model):
    """What a predictor said about a job (or, in shadow mode, about a job it did not place),
    with the observations it had seen; P2 updates replay them."""

    workload = models.ForeignKey("catalog.Workload", on_delete=models.CASCADE, related_name="+")
    job_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    version = models.ForeignKey(PredictorVersion, on_delete=models.PROTECT, related_name="predictions")
    shadow = models.BooleanField(default=False)
    observations = models.JSONField(default=list, blank=True)
    estimates = models.JSONField(default=dict, help_text="rho, tau and their uncertainties.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Every round reads the newest prediction of each of its jobs' workloads
        # (selectors.latest_estimates_by_workload): one index probe per workload, however many
        # predictions P2 stored before (one per telemetry measurement of a job).
        indexes = [models.Index(fields=["workload", "-id"], name="prediction_newest")]

    def __str__(self):
        return f"prediction for {self.workload} by {self.version}"
