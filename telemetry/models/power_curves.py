"""Each GPU's own power curve (watts against utilization), fitted from its 1 Hz samples.

The optimiser uses a board's fitted curve instead of its type's datasheet line once enough
samples back it (docs/power_limits.md); the console shows both.
"""
from django.db import models


class GpuPowerCurve(models.Model):
    gpu = models.OneToOneField("telemetry.Gpu", on_delete=models.CASCADE, related_name="power_curve")
    points = models.JSONField(help_text="[[utilization 0..1, W], ...], increasing utilization.")
    residual_std_w = models.FloatField(help_text="Spread of the samples around the curve, W.")
    samples = models.PositiveIntegerField(help_text="Samples the fit used.")
    power_limit_w = models.FloatField(
        null=True, blank=True, help_text="The limit in force while sampled (None: the default).",
    )
    fitted_at = models.DateTimeField()

    def __str__(self):
        return f"power curve of {self.gpu} ({self.samples} samples)"
