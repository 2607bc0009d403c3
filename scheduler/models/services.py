"""Inference services (docs/services.md): a long-running service with a latency SLO whose
replicas are jobs (Job.service). Its T_min is derived each round from its traffic
(scheduler.serving), not typed; what its replicas report of their traffic is kept as
ServiceTraffic samples, which the forecast and the console read."""
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q


class ServiceState(models.TextChoices):
    ACTIVE = "active", "Active"
    STOPPED = "stopped", "Stopped"


class Service(models.Model):
    name = models.CharField(max_length=120)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="services")
    tenant = models.ForeignKey("scheduler.Tenant", on_delete=models.PROTECT, related_name="services")
    workload = models.ForeignKey(
        "catalog.Workload", on_delete=models.PROTECT, related_name="services",
        help_text="The model it serves: its speed is the workload's predicted steps (batches) per second.",
    )
    latency_bound_ms = models.FloatField(help_text="The SLO: P99 latency at most this many ms.")
    min_replicas = models.PositiveSmallIntegerField(default=1)
    max_replicas = models.PositiveSmallIntegerField(default=1)
    batch_size = models.PositiveIntegerField(default=1, help_text="Requests answered per step (one batch).")
    expected_rate_rps = models.FloatField(
        default=0.0, help_text="Requests per second to plan for until its replicas report traffic.",
    )
    priority = models.IntegerField(default=0)
    command = models.TextField(blank=True, help_text="What an agent runs for each replica.")
    environment = models.JSONField(default=dict, blank=True, help_text="Extra environment variables of its replicas.")
    state = models.CharField(max_length=16, choices=ServiceState.choices, default=ServiceState.ACTIVE, db_index=True)

    # Derived by the rounds (scheduler.serving), never typed.
    request_rate_rps = models.FloatField(default=0.0, help_text="Requests per second its replicas report now (sum).")
    p99_ms = models.FloatField(null=True, blank=True, help_text="The P99 its replicas last reported (the worst).")
    forecast_rps = models.FloatField(default=0.0, help_text="The rate the last round planned for.")
    calibration = models.FloatField(default=1.0, help_text="Latency factor on the modelled P99, learnt from reports.")
    speed_factor = models.FloatField(
        default=1.0, help_text="Replicas' true speed over their predicted one, learnt from reports (capacity).",
    )
    calibration_spread = models.JSONField(
        default=list, blank=True, help_text="The learner's covariance of (ln(c/f), ln f); empty: not learnt yet.",
    )
    replicas_target = models.PositiveSmallIntegerField(default=0, help_text="Replicas the last round planned.")
    replica_min_throughput = models.FloatField(
        null=True, blank=True, help_text="T_min of each replica (steps/s) the last round derived.",
    )
    slo_note = models.CharField(max_length=300, blank=True, help_text="Why the plan puts the SLO at risk, if it does.")
    planned_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(latency_bound_ms__gt=0), name="service_latency_bound_positive"),
            models.CheckConstraint(condition=Q(min_replicas__gte=1), name="service_min_replicas_positive"),
            models.CheckConstraint(condition=Q(max_replicas__gte=F("min_replicas")), name="service_replicas_ordered"),
            models.CheckConstraint(condition=Q(batch_size__gte=1), name="service_batch_positive"),
            models.CheckConstraint(condition=Q(expected_rate_rps__gte=0), name="service_expected_rate_nonnegative"),
        ]

    def __str__(self):
        return f"service {self.pk} ({self.name or self.workload.name}, {self.state})"


class ServiceTraffic(models.Model):
    """One report of a replica's traffic: its request rate and the P99 it measured."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="traffic")
    job = models.ForeignKey("scheduler.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(db_index=True)
    request_rate_rps = models.FloatField(validators=[MinValueValidator(0)])
    p99_ms = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0), MaxValueValidator(3.6e6)])

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["service", "at"], name="service_traffic_at")]
        constraints = [
            models.CheckConstraint(condition=Q(request_rate_rps__gte=0), name="service_traffic_rate_nonnegative"),
        ]

    def __str__(self):
        return f"{self.service_id} at {self.at:%Y-%m-%d %H:%M:%S}: {self.request_rate_rps:g} requests/s"
