"""GPU types: the hardware facts the optimiser needs to price a placement."""
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from ..measurement_limits import MAX_POWER_PER_GPU_W

#: Agents report types lower-cased (telemetry.services.nodes): a name with capitals could
#: never be matched by a node, and "V100" beside "v100" would be two types.
lower_case_name = RegexValidator(r"^[a-z0-9_-]+$", "Use lower-case letters, digits, '-' and '_' (e.g. v100).")


def validate_power_curve(points):
    """A power curve is [[utilization 0..1, watts >= 0], ...], strictly increasing in utilization."""
    if not isinstance(points, list):
        raise ValidationError("The power curve must be a list of [utilization, watts] points.")
    last = -1.0
    for point in points:
        if not (isinstance(point, (list, tuple)) and len(point) == 2):
            raise ValidationError(f"Point {point!r} is not a [utilization, watts] pair.")
        util, watts = point
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (util, watts)):
            raise ValidationError(f"Point {point!r} must hold two numbers.")
        if not 0.0 <= util <= 1.0 or not 0 <= watts <= MAX_POWER_PER_GPU_W:
            raise ValidationError(
                f"Point {point!r}: utilization must lie in [0, 1] and watts in [0, {MAX_POWER_PER_GPU_W:g}]."
            )
        if util <= last:
            raise ValidationError("Power-curve utilizations must be strictly increasing.")
        last = util


class GpuType(models.Model):
    """One kind of GPU (k80, p100, v100, t4, a100, h100, h200, l4, a10, l40s, ...), per GPU, not per board.

    The power curve gamma(u) maps utilization to watts; it starts from datasheet facts and is
    replaced by profiling (NVML) as measurements come in, so every value carries provenance.
    """

    name = models.SlugField(
        max_length=32, unique=True, validators=[lower_case_name], help_text="Short name, e.g. v100."
    )
    description = models.CharField(max_length=200, blank=True)
    memory_gb = models.FloatField(help_text="Device memory per GPU in GB.")
    tdp_w = models.FloatField(help_text="Board power limit per GPU in W (datasheet).")
    idle_w = models.FloatField(help_text="Power per GPU when idle in W.")
    power_curve = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_power_curve],
        help_text="[[utilization 0..1, watts], ...] points of a piecewise-linear curve.",
    )
    provenance = models.JSONField(
        default=dict, blank=True, help_text="Where each value comes from: {field: source}."
    )
    product_names = models.JSONField(
        default=list,
        blank=True,
        help_text="Substrings of NVML product names that identify this type, e.g. 'V100'.",
    )
    profiled_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When GOGH's benchmark suite last finished on this type (empty: never; predictions from datasheets).",
    )
    profiled_suite_version = models.CharField(max_length=16, blank=True, help_text="The suite version of that run.")
    profiled_driver_version = models.CharField(max_length=40, blank=True, help_text="The GPU driver of that run.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(memory_gb__gt=0),
                name="gputype_memory_positive",
                violation_error_message="Memory must be more than 0 GB.",
            ),
            models.CheckConstraint(
                condition=models.Q(tdp_w__gt=0),
                name="gputype_tdp_positive",
                violation_error_message="TDP must be more than 0 W.",
            ),
            models.CheckConstraint(
                condition=models.Q(idle_w__gte=0, idle_w__lte=models.F("tdp_w")),
                name="gputype_idle_within_tdp",
                violation_error_message="Idle power must lie between 0 W and the TDP.",
            ),
        ]

    def __str__(self):
        return self.name
