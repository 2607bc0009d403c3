"""GPU samples: what agents read from NVML at >= 1 Hz, raw for a while, then per minute.

Raw rows are kept for GOGH_TELEMETRY_RAW_RETENTION_S; the beat task
telemetry.tasks.gpu_samples_downsample folds older ones into per-minute aggregates and deletes
them, so the table stays bounded while the history keeps its shape (mean and peak power,
mean utilization, peak temperature, ECC counters for hardware-ageing analysis).
One raw row per (GPU, instant): an agent that resends a batch whose answer it never got
(timeout) adds nothing twice.
"""
from django.db import models
from django.db.models import Q


class GpuSample(models.Model):
    gpu = models.ForeignKey("telemetry.Gpu", on_delete=models.CASCADE, related_name="samples")
    ts = models.DateTimeField(help_text="When the agent read the GPU.")
    power_w = models.FloatField(null=True, blank=True)
    utilization = models.FloatField(null=True, blank=True, help_text="0..1 (NVML's percent / 100).")
    memory_used_mb = models.FloatField(null=True, blank=True)
    sm_clock_mhz = models.FloatField(null=True, blank=True)
    temperature_c = models.FloatField(null=True, blank=True)
    ecc_corrected = models.BigIntegerField(null=True, blank=True, help_text="Aggregate (lifetime) count.")
    ecc_uncorrected = models.BigIntegerField(null=True, blank=True, help_text="Aggregate (lifetime) count.")
    retired_pages = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-ts"]
        indexes = [models.Index(fields=["ts"], name="gpusample_ts")]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "ts"], name="gpusample_one_per_gpu_instant"),
            models.CheckConstraint(
                condition=Q(utilization__isnull=True) | Q(utilization__gte=0, utilization__lte=1),
                name="gpusample_utilization_unit",
            ),
        ]

    def __str__(self):
        return f"{self.gpu_id} at {self.ts:%H:%M:%S}"


class GpuSampleMinute(models.Model):
    """The raw samples of one GPU in one minute, folded. Means skip missing readings."""

    gpu = models.ForeignKey("telemetry.Gpu", on_delete=models.CASCADE, related_name="sample_minutes")
    minute = models.DateTimeField(help_text="Start of the minute (UTC).")
    samples = models.PositiveIntegerField()
    power_w_mean = models.FloatField(null=True, blank=True)
    power_w_max = models.FloatField(null=True, blank=True)
    utilization_mean = models.FloatField(null=True, blank=True)
    memory_used_mb_max = models.FloatField(null=True, blank=True)
    sm_clock_mhz_mean = models.FloatField(null=True, blank=True)
    temperature_c_max = models.FloatField(null=True, blank=True)
    ecc_corrected_max = models.BigIntegerField(null=True, blank=True)
    ecc_uncorrected_max = models.BigIntegerField(null=True, blank=True)
    retired_pages_max = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-minute"]
        constraints = [models.UniqueConstraint(fields=["gpu", "minute"], name="gpusampleminute_one_per_gpu_minute")]

    def __str__(self):
        return f"{self.gpu_id} {self.minute:%Y-%m-%d %H:%M}"
