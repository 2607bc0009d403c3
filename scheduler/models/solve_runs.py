"""Solve runs: one record per scheduling round, so every decision can be explained later."""
from django.db import models


class SolveTrigger(models.TextChoices):
    SUBMIT = "submit", "Job submitted"
    CANCEL = "cancel", "Job cancelled"
    FINISH = "finish", "Job finished"
    NODE = "node", "Node change"
    PERIODIC = "periodic", "Periodic"
    MANUAL = "manual", "Manual"
    PREDICTION = "prediction", "Prediction ready"


class SolveStatus(models.TextChoices):
    RUNNING = "running", "Running"
    OPTIMAL = "optimal", "Optimal"
    FEASIBLE = "feasible", "Feasible (time limit or gap)"
    FALLBACK = "fallback", "Fell back to another solver"
    FAILED = "failed", "Failed"
    SUPERSEDED = "superseded", "Not applied: placements changed while it solved"


class SolveRun(models.Model):
    trigger = models.CharField(max_length=16, choices=SolveTrigger.choices)
    solver = models.CharField(max_length=40)
    status = models.CharField(max_length=16, choices=SolveStatus.choices, default=SolveStatus.RUNNING)
    dry_run = models.BooleanField(default=False)
    shadow = models.BooleanField(default=False, help_text="Decided in shadow mode: recorded, not dispatched.")
    decision = models.JSONField(
        default=dict, blank=True, help_text="Placements and pending reasons as decided, applied or not."
    )
    objective = models.FloatField(null=True, blank=True)
    gap = models.FloatField(null=True, blank=True, help_text="Relative MIP gap at the end.")
    duration_s = models.FloatField(null=True, blank=True)
    num_jobs = models.PositiveIntegerField(default=0)
    num_gpus = models.PositiveIntegerField(default=0)
    num_variables = models.PositiveIntegerField(default=0)
    num_constraints = models.PositiveIntegerField(default=0)
    fallback_reason = models.CharField(max_length=300, blank=True)
    power_w = models.FloatField(null=True, blank=True, help_text="Predicted power of the decision.")
    num_placed = models.PositiveIntegerField(default=0)
    load = models.FloatField(null=True, blank=True, help_text="Cluster load this round (adaptive weight history).")
    energy_weight = models.FloatField(null=True, blank=True)
    notes = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self):
        return f"solve {self.pk} ({self.solver}, {self.status})"
