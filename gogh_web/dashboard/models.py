"""Trade-off sweeps, cached per cluster state.

A sweep is created once per state digest (tradeoff.state_digest) with the problem it solves,
so every point task solves the same state even if the cluster moves on meanwhile; each point
task stores its own row, so no result backend or chord is needed and a lost task only leaves
its point missing: past the sweep's timeout it counts as failed (selectors.sweep_status), and
the page's next request replaces it.
"""
from django.db import models


class TradeoffSweep(models.Model):
    state_digest = models.CharField(max_length=64, unique=True)
    problem = models.JSONField(help_text="The cluster state as solved (scheduler.optimizer.serialization).")
    surplus_value_w = models.FloatField(help_text="W-equivalent of one unit of relative surplus used by every point.")
    points_expected = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"sweep {self.pk} ({self.state_digest[:10]})"


class TradeoffPoint(models.Model):
    sweep = models.ForeignKey(TradeoffSweep, on_delete=models.CASCADE, related_name="points")
    index = models.PositiveSmallIntegerField()
    energy_weight = models.FloatField()
    fairness_weight = models.FloatField(help_text="The point's SolverSettings.fairness_weight (0: off).")
    throughput = models.FloatField(help_text="Predicted steps/s, all placed jobs.")
    power_w = models.FloatField()
    jain = models.FloatField(help_text="Jain's fairness index over tenants.")
    placed = models.PositiveIntegerField()
    status = models.CharField(max_length=16)
    seconds = models.FloatField()

    class Meta:
        ordering = ["sweep", "index"]
        constraints = [models.UniqueConstraint(fields=["sweep", "index"], name="tradeoffpoint_one_per_index")]

    def __str__(self):
        return f"point {self.index} of {self.sweep_id}"
