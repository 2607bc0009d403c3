"""Jobs: what users submit. State changes go through scheduler.services only, which check
them against scheduler.lifecycle; the database refuses a pending job without a reason."""
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from ..lifecycle import JobState

#: The longest grace period a job may ask for between SIGTERM and SIGKILL.
MAX_GRACE_S = 3600
JOB_STATE_CHOICES = [(state.value, state.value.capitalize()) for state in JobState]


class Job(models.Model):
    name = models.CharField(max_length=120, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs")
    tenant = models.ForeignKey("scheduler.Tenant", on_delete=models.PROTECT, related_name="jobs")
    workload = models.ForeignKey("catalog.Workload", on_delete=models.PROTECT, related_name="jobs")
    min_throughput = models.FloatField(help_text="T_min: required steps per second.")
    max_gpus = models.PositiveSmallIntegerField(help_text="D_j: the most GPUs the job may be spread over.")
    priority = models.IntegerField(default=0, help_text="Higher is admitted first when demand exceeds the cluster.")
    total_steps = models.BigIntegerField(null=True, blank=True)
    memory_gb = models.FloatField(
        null=True, blank=True,
        help_text="GPU memory the job needs on each of its GPUs, in GB; empty: the workload's measured peak, if any.",
    )
    deadline = models.DateTimeField(null=True, blank=True)
    command = models.TextField(blank=True, help_text="What an agent runs for this job.")
    environment = models.JSONField(default=dict, blank=True, help_text="Extra environment variables.")

    state = models.CharField(max_length=16, choices=JOB_STATE_CHOICES, default=JobState.PENDING.value, db_index=True)
    pending_reason = models.CharField(max_length=300, blank=True)
    state_reason = models.CharField(max_length=300, blank=True, help_text="Why the job last changed state.")
    steps_done = models.BigIntegerField(
        default=0, help_text="The most steps the job has reached (never decreases, also after a restart)."
    )
    # The job contract (docs/jobs.md): where its work is kept, and what restarts cost it.
    preemption_grace_s = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1), MaxValueValidator(MAX_GRACE_S)],
        help_text="Seconds between SIGTERM and SIGKILL when the job is stopped (moved, preempted).",
    )
    checkpoint_step = models.BigIntegerField(null=True, blank=True, help_text="Step of its last checkpoint.")
    checkpoint_path = models.CharField(max_length=1000, blank=True, help_text="Where that checkpoint is.")
    checkpoint_at = models.DateTimeField(null=True, blank=True)
    resume_step = models.BigIntegerField(default=0, help_text="The step its current run resumed from (0: first run).")
    current_step = models.BigIntegerField(
        default=0, help_text="Where its current run is: counts from resume_step after a restart."
    )
    restarts = models.PositiveIntegerField(default=0, help_text="Runs interrupted after they started.")
    steps_lost = models.BigIntegerField(default=0, help_text="Steps done and lost to restarts (redone since).")
    energy_kwh = models.FloatField(
        default=0.0, help_text="Energy its runs drew: its share of its GPUs' measured power (split when co-located).",
    )
    handover_until = models.DateTimeField(
        null=True, blank=True,
        help_text="Moved or preempted while running: its next run waits for the last one to stop, until then at most.",
    )
    # Exploration (docs/exploration.md): a bounded run on a GPU type the catalog calls too slow.
    probe_gpu_type = models.CharField(
        max_length=32, blank=True, help_text="The GPU type of its current probe (empty: not probing)."
    )
    probe_until = models.DateTimeField(null=True, blank=True, help_text="When its current probe ends.")
    probes = models.PositiveSmallIntegerField(default=0, help_text="Probes it has had.")
    last_probe_at = models.DateTimeField(null=True, blank=True, help_text="When its last probe started.")
    # A case of a profiling campaign (docs/profiling.md): GOGH's own job, not a user's.
    campaign = models.ForeignKey(
        "scheduler.ProfilingCampaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    profiling_cases = models.JSONField(default=list, blank=True, help_text="The suite cases this job runs.")
    # A replica of an inference service (docs/services.md): its T_min is the service's, derived each round.
    service = models.ForeignKey(
        "scheduler.Service", null=True, blank=True, on_delete=models.PROTECT, related_name="replicas"
    )

    submitted_at = models.DateTimeField(auto_now_add=True, db_index=True)
    placed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 -- NULL (no key) stays out of the unique constraint
    request_fingerprint = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-submitted_at", "-id"]
        indexes = [models.Index(fields=["tenant", "state"], name="job_tenant_state")]
        constraints = [
            models.CheckConstraint(condition=Q(min_throughput__gt=0), name="job_min_throughput_positive"),
            models.CheckConstraint(condition=Q(max_gpus__gte=1), name="job_max_gpus_positive"),
            models.CheckConstraint(
                condition=Q(memory_gb__isnull=True) | Q(memory_gb__gt=0), name="job_memory_positive"
            ),
            models.CheckConstraint(
                condition=Q(total_steps__isnull=True) | Q(total_steps__gte=1), name="job_total_steps_positive"
            ),
            models.CheckConstraint(
                condition=Q(checkpoint_step__isnull=True) | Q(checkpoint_step__gte=0), name="job_checkpoint_nonnegative"
            ),
            models.CheckConstraint(
                condition=Q(checkpoint_step__isnull=True) | Q(total_steps__isnull=True)
                | Q(checkpoint_step__lte=F("total_steps")),
                name="job_checkpoint_within_total",
            ),
            models.CheckConstraint(condition=Q(steps_lost__gte=0), name="job_steps_lost_nonnegative"),
            models.CheckConstraint(
                condition=~Q(state=JobState.PENDING.value) | ~Q(pending_reason=""),
                name="job_pending_has_reason",
            ),
            models.UniqueConstraint(
                fields=["owner", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="job_unique_idempotency_key",
            ),
        ]

    def __str__(self):
        return f"job {self.pk} ({self.workload.name}, {self.state})"

    @property
    def is_terminal(self) -> bool:
        from ..lifecycle import TERMINAL

        return JobState(self.state) in TERMINAL
