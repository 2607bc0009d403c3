"""Runs the control plane submitted through a pushing executor (Slurm), and its syncs.

The agent executor needs neither: its agents pull their assignments (the allocations) and
report back. A pushing executor is told what to run, so the control plane keeps what it
submitted and compares it with each snapshot (scheduler.dispatch.executor_sync): every
decision is repaired from the executor's truth at the next sync.
"""
from django.db import models
from django.db.models import Q

from ..executors.base import PENDING, RUN_STATES

RUN_STATE_CHOICES = [(state, state.replace("_", " ").capitalize()) for state in RUN_STATES]


class ExecutorRun(models.Model):
    """One submission of a job: its executor's id, where it runs, how far its output was read,
    and its stop. A job has at most one run not yet settled (its end applied to the job): its
    next run is submitted only once the last one has ended."""

    job = models.ForeignKey("scheduler.Job", on_delete=models.CASCADE, related_name="executor_runs")
    executor = models.CharField(max_length=16)
    external_id = models.CharField(max_length=64, help_text="The executor's id of the run (Slurm's job id).")
    node = models.ForeignKey("telemetry.Node", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    gpu_type = models.CharField(max_length=64, help_text="The executor's name of the GPU type asked for.")
    num_gpus = models.PositiveSmallIntegerField(default=1)
    shares = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Shares of one GPU (co-located).")
    gpu_indexes = models.JSONField(default=list, blank=True, help_text="The GPUs it holds, as the executor says.")
    state = models.CharField(max_length=16, choices=RUN_STATE_CHOICES, default=PENDING)
    native_state = models.CharField(max_length=32, blank=True, help_text="The executor's own word for its state.")
    exit_code = models.IntegerField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True, help_text="The executor's reason for its state.")
    output_path = models.CharField(max_length=1000, blank=True)
    output_offset = models.BigIntegerField(default=0, help_text="Bytes of its output read so far.")
    submitted_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True, help_text="When its preemption notice went out.")
    kill_at = models.DateTimeField(null=True, blank=True, help_text="When it is killed if still running.")
    stop_reason = models.CharField(max_length=300, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True, help_text="When its end was applied to the job.")
    rate_step = models.BigIntegerField(null=True, blank=True, help_text="The step its throughput is measured from.")
    rate_at = models.DateTimeField(null=True, blank=True, help_text="When its output reached rate_step.")

    class Meta:
        ordering = ["-submitted_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["executor", "external_id"], name="executor_run_unique_external_id"),
            models.UniqueConstraint(fields=["job"], condition=Q(settled_at__isnull=True),
                                    name="executor_run_one_unsettled_per_job"),
        ]

    def __str__(self):
        return f"{self.executor} {self.external_id} (job {self.job_id})"


class ExecutorSync(models.Model):
    """One sync with a pushing executor: what it found and did, or the command that failed
    and its message (then nothing of it was applied)."""

    executor = models.CharField(max_length=16)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    command = models.CharField(max_length=500, blank=True, help_text="The command that failed, if one did.")
    error = models.TextField(blank=True)
    stats = models.JSONField(default=dict, blank=True, help_text="Counts: runs submitted, started, ended, signalled.")
    cpu_s = models.FloatField(null=True, blank=True, help_text="Control-plane CPU seconds the sync took.")

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["started_at"], name="executor_sync_started")]

    def __str__(self):
        return f"{self.executor} sync at {self.started_at:%Y-%m-%d %H:%M:%S}"
