"""GPUs: one row per physical device, with the topology facts placement needs.

A row is never deleted by registration: allocations refer to it (PROTECT) and keep their
history. A GPU its agent stops reporting becomes `missing`; missing rows stand outside the
one-GPU-per-index rule, so the device that now sits at that index can be recorded.
"""
from django.db import models
from django.db.models import Q


class GpuState(models.TextChoices):
    HEALTHY = "healthy", "Healthy"
    FAILED = "failed", "Failed"
    DISABLED = "disabled", "Disabled by an operator"
    MISSING = "missing", "Not reported by its agent"


class Gpu(models.Model):
    node = models.ForeignKey("telemetry.Node", on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField(help_text="Device index on the node (NVML order).")
    uuid = models.CharField(max_length=80, unique=True, help_text="NVML UUID, e.g. GPU-xxxxxxxx-....")
    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.PROTECT, related_name="gpus")
    product_name = models.CharField(max_length=100, blank=True, help_text="NVML product name as reported.")
    pci_bus_id = models.CharField(max_length=32, blank=True)
    pcie_switch = models.CharField(
        max_length=64, blank=True, help_text="Identifier of the PCIe switch the GPU sits behind."
    )
    numa_node = models.SmallIntegerField(null=True, blank=True)
    memory_gb = models.FloatField(null=True, blank=True, help_text="Memory as reported; type default if empty.")
    state = models.CharField(max_length=16, choices=GpuState.choices, default=GpuState.HEALTHY, db_index=True)
    state_reason = models.CharField(max_length=200, blank=True, help_text="Why the GPU is in its state.")
    external_holder = models.CharField(
        max_length=200, blank=True,
        help_text="A run GOGH did not submit holds this GPU (e.g. a job submitted straight to Slurm): "
                  "nothing is planned on it while this says so.",
    )
    # Power limit (docs/power_limits.md): the range and default NVML reports, the limit in force
    # as last reported, and why the last limit asked for was not applied.
    power_limit_min_w = models.FloatField(null=True, blank=True, help_text="Lowest limit NVML allows, W.")
    power_limit_max_w = models.FloatField(null=True, blank=True, help_text="Highest limit NVML allows, W.")
    power_limit_default_w = models.FloatField(null=True, blank=True, help_text="The board's default limit, W.")
    power_limit_w = models.FloatField(null=True, blank=True, help_text="The limit in force, as last reported, W.")
    power_limit_error = models.CharField(
        max_length=300, blank=True, help_text="Why the last limit asked for was refused (empty: applied)."
    )
    # This board's own speed (telemetry/gpu_speed.py): its throughput over its type's other boards'
    # on the same work, learnt from the jobs it ran; the type's prediction is planned times it; a
    # board that drifts slower is flagged before it fails.
    speed_factor = models.FloatField(default=1.0)
    speed_factor_std = models.FloatField(null=True, blank=True)
    speed_observations = models.PositiveIntegerField(default=0)
    speed_flag = models.CharField(max_length=300, blank=True, help_text="Why this board is flagged (empty: it is not).")
    speed_flagged_at = models.DateTimeField(null=True, blank=True)
    # Health signals the agent reads (ECC errors, retired/remapped pages, XID errors, throttle
    # reasons, temperature), the latest values as reported.
    health = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["node__hostname", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "index"],
                condition=~Q(state=GpuState.MISSING),
                name="gpu_unique_index_per_node",
            )
        ]

    def __str__(self):
        return f"{self.node.hostname}/gpu{self.index} ({self.gpu_type.name})"
