"""Allocations: a job on one GPU for a span of time, with what was predicted for it.

A job on n GPUs holds n open allocations (end is empty); the database refuses two open
allocations of one job on the same GPU.
"""
from django.db import models
from django.db.models import Q


class Allocation(models.Model):
    job = models.ForeignKey("scheduler.Job", on_delete=models.CASCADE, related_name="allocations")
    gpu = models.ForeignKey("telemetry.Gpu", on_delete=models.PROTECT, related_name="allocations")
    solve_run = models.ForeignKey(
        "scheduler.SolveRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="allocations"
    )
    # A list, not one job: up to theta jobs share a GPU (a pair is a group of two).
    partners = models.ManyToManyField(
        "scheduler.Job", blank=True, related_name="+", help_text="The jobs sharing this GPU, if any."
    )
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)
    predicted_throughput = models.FloatField(null=True, blank=True, help_text="Steps/s of the whole job.")
    predicted_power_w = models.FloatField(null=True, blank=True, help_text="W drawn on this GPU.")
    power_limit_w = models.FloatField(
        null=True, blank=True, help_text="Power limit the round chose for this GPU, W (empty: the board's default).",
    )
    power_limit_speed = models.FloatField(
        null=True, blank=True,
        help_text="The fraction of its default-limit throughput the round planned the job at under power_limit_w "
                  "(empty: at the default).",
    )
    energy_counted_until = models.DateTimeField(
        null=True, blank=True, help_text="Energy accounting has counted this allocation's share of its GPU up to here.",
    )

    class Meta:
        ordering = ["-start", "-id"]
        # A round asks whether any allocation started since its snapshot: without an index that
        # read walks the whole allocation history every round.
        indexes = [models.Index(fields=["start"], name="allocation_start")]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "gpu"], condition=Q(end__isnull=True), name="allocation_one_open_per_job_gpu"
            ),
            models.CheckConstraint(
                condition=Q(end__isnull=True) | Q(end__gte=models.F("start")), name="allocation_end_after_start"
            ),
        ]

    def __str__(self):
        return f"{self.job_id} on {self.gpu}"
