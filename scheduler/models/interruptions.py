"""Interruptions: each time a job was stopped before its end to run again (moved, preempted,
its node went down, its GPU failed), with why, and the work it lost.

A job that had started loses the steps since its last checkpoint (all of them without one) and
the restart overhead: the time its next run takes to make progress again beyond where it
resumed (start, load the checkpoint, warm up), measured here per restart (overhead_s), which
the rounds use per workload once measured (docs/jobs.md)."""
from django.db import models
from django.db.models import Q


class InterruptionKind(models.TextChoices):
    MOVED = "moved", "Moved by a round"
    PREEMPTED = "preempted", "Preempted for a higher-priority job"
    NODE_DOWN = "node_down", "Its node went down"
    GPU_FAILED = "gpu_failed", "Its GPU failed"
    STOPPED = "stopped", "Exited asking to be resumed"


class JobInterruption(models.Model):
    job = models.ForeignKey("scheduler.Job", on_delete=models.CASCADE, related_name="interruptions")
    kind = models.CharField(max_length=16, choices=InterruptionKind.choices)
    reason = models.CharField(max_length=300)
    at = models.DateTimeField(db_index=True)
    solve_run = models.ForeignKey(
        "scheduler.SolveRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="interruptions"
    )
    was_running = models.BooleanField(help_text="It had started: its process restarts (a placed job only moves).")
    steps_done = models.BigIntegerField(default=0, help_text="Where its run was when it was stopped.")
    resume_step = models.BigIntegerField(default=0, help_text="Where its next run resumes (its last checkpoint).")
    steps_lost = models.BigIntegerField(default=0, help_text="steps_done - resume_step: work to redo.")
    overhead_s = models.FloatField(
        null=True, blank=True, help_text="Measured: seconds its next run took to progress beyond resume_step."
    )
    resumed_at = models.DateTimeField(null=True, blank=True, help_text="When its next run started.")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["job", "-at"], name="interruption_job_at")]
        constraints = [
            models.CheckConstraint(condition=Q(steps_lost__gte=0), name="interruption_steps_lost_nonnegative"),
            models.CheckConstraint(
                condition=Q(overhead_s__isnull=True) | Q(overhead_s__gte=0), name="interruption_overhead_nonnegative"
            ),
        ]

    def __str__(self):
        return f"job {self.job_id} {self.kind} at {self.at:%Y-%m-%d %H:%M:%S}"
