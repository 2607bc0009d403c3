"""Solver settings: one row (a singleton) that operators edit in the admin, and the audit
trail of every change to it (who, what, from which value to which, when)."""
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from ..optimizer.problem import MAX_THETA, THETA_REFUSED
from ..optimizer.registry import SOLVER_CHOICES
from ..serving.latency import DEFAULT_MARGIN

BACKEND_CHOICES = [("highs", "HiGHS (highspy)"), ("cbc", "CBC (bundled with PuLP)")]
# Upper bounds of the weights: far beyond any useful setting, and low enough that the
# objective's coefficients stay in the range a MIP solver handles (fairness_weight 1e308 left
# HiGHS "Not Solved" and every round fell back to the greedy decision).
MAX_ENERGY_WEIGHT = 1000.0
MAX_FAIRNESS_WEIGHT = 1000.0
MAX_WATTS_SETTING = 100_000.0
MAX_LOAD_WINDOW = 10_000


class SolverConfig(models.Model):
    SINGLETON_PK = 1

    solver = models.CharField(max_length=40, choices=SOLVER_CHOICES, default="ilp")
    backend = models.CharField(
        max_length=16, choices=BACKEND_CHOICES, default="highs", help_text="MILP backend of ilp and cells."
    )
    time_limit_s = models.FloatField(default=10.0, validators=[MinValueValidator(0.1), MaxValueValidator(3600)])
    gap = models.FloatField(
        default=0.01, validators=[MinValueValidator(0), MaxValueValidator(1)], help_text="Relative MIP gap."
    )
    base_energy_weight = models.FloatField(
        default=1.0, validators=[MinValueValidator(0), MaxValueValidator(MAX_ENERGY_WEIGHT)]
    )
    adaptive_weight = models.BooleanField(default=True, help_text="weight = base * (1 + (load - mean) / std), clipped.")
    load_window = models.PositiveIntegerField(
        default=20, validators=[MinValueValidator(1), MaxValueValidator(MAX_LOAD_WINDOW)],
        help_text="Rounds of load history for the adaptive weight.",
    )
    throughput_value_w = models.FloatField(
        default=0.0, validators=[MinValueValidator(0), MaxValueValidator(MAX_WATTS_SETTING)],
        help_text="W-equivalent of one unit of relative surplus over T_min."
    )
    fairness_weight = models.FloatField(
        default=0.0,
        validators=[MinValueValidator(0), MaxValueValidator(MAX_FAIRNESS_WEIGHT)],
        help_text=(
            "0: off. Above 0, one unit of the least-served tenant's share (mean throughput / T_min of its jobs) "
            "is worth this many average GPUs at full power, and among equally many admitted jobs of a priority "
            "those of tenants with fewer jobs go first."
        ),
    )
    theta = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(MAX_THETA, message=THETA_REFUSED)],
        help_text=(
            f"Jobs per GPU at most (1: no sharing; 2: pairs, as measured; up to {MAX_THETA}: groups, "
            "estimated from pairs)."
        ),
    )
    migration_cost_w = models.FloatField(
        default=50.0, validators=[MinValueValidator(0), MaxValueValidator(MAX_WATTS_SETTING)],
        help_text="Cost of moving a placed job.",
    )
    move_cooldown_s = models.FloatField(
        default=600.0, validators=[MinValueValidator(0), MaxValueValidator(7 * 86400)],
        help_text=(
            "A job placed or moved is not moved again for this long, unless its GPU fails, its node goes down "
            "or a higher-priority job needs its GPUs."
        ),
    )
    move_hysteresis = models.FloatField(
        default=0.2, validators=[MinValueValidator(0), MaxValueValidator(10)],
        help_text="A running job moves only when the predicted saving beats the move's cost by this fraction.",
    )
    max_preemptions_per_hour = models.PositiveSmallIntegerField(
        default=2, validators=[MaxValueValidator(60)],
        help_text="A job is preempted for higher-priority jobs at most this often in any hour (0: never).",
    )
    max_moves_per_job = models.PositiveSmallIntegerField(
        default=3, validators=[MaxValueValidator(100)],
        help_text=(
            "A job is moved to save energy at most this many times (0: never); its GPU failing, its node going "
            "down or a higher-priority job still take it away."
        ),
    )
    idle_gpus_powered_down = models.BooleanField(default=True)
    power_limits = models.BooleanField(
        default=True,
        help_text="Choose each GPU's power limit with its placement (docs/power_limits.md); off: default limits.",
    )
    services_first = models.BooleanField(
        default=True,
        help_text="Inference services' replicas are admitted before every training job (docs/services.md).",
    )
    service_latency_margin = models.FloatField(
        default=DEFAULT_MARGIN, validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="Services are planned for P99 <= bound / (1 + margin): co-location only where that holds.",
    )
    topology_isolation = models.BooleanField(default=False, help_text="Tenants never share a PCIe switch.")
    cell_size_gpus = models.PositiveIntegerField(
        default=1024, validators=[MinValueValidator(1), MaxValueValidator(10**6)]
    )
    seed = models.IntegerField(default=0)
    fair_share_half_life_h = models.FloatField(
        default=168.0, validators=[MinValueValidator(0.01), MaxValueValidator(24 * 365)],
        help_text="Tenants' past usage counts half after this many hours (Slurm's PriorityDecayHalfLife, 7 days).",
    )
    shadow_mode = models.BooleanField(
        default=False,
        help_text="Record decisions and predictions without dispatching (fills the catalog before going live).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "solver settings"
        verbose_name_plural = "solver settings"

    def __str__(self):
        return "Solver settings"

    @classmethod
    def load(cls) -> "SolverConfig":
        config, _ = cls.objects.get_or_create(pk=cls.SINGLETON_PK)
        return config


class SolverConfigChange(models.Model):
    config = models.ForeignKey(SolverConfig, on_delete=models.CASCADE, related_name="changes")
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    field = models.CharField(max_length=40)
    old_value = models.CharField(max_length=200)
    new_value = models.CharField(max_length=200)
    changed_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self):
        return f"{self.field}: {self.old_value} -> {self.new_value}"
