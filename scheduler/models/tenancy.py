"""Tenants: the unit of isolation. A user belongs to one tenant and sees only its jobs; staff
see all. Jobs of different tenants never share a GPU (enforced by the optimiser).

A cluster shared by teams is run by quotas and fair share (docs/tenants.md): a tenant's nominal
quota per GPU type (TenantQuota) is its own whenever its jobs need it, and idle quota may be
borrowed by the others (the whole cluster is one cohort, as in Kueue) until the owner needs it
back; its shares and its decayed usage (TenantUsage) give its fair-share factor, which orders
admission within a priority level; its energy is accounted per day (TenantEnergyDay), against
an optional monthly budget."""
from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models


class Tenant(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=50, unique=True)
    description = models.CharField(max_length=200, blank=True)
    shares = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1)],
        help_text="Fair-share weight: the tenant's entitled fraction of the cluster is its shares over everyone's.",
    )
    may_borrow = models.BooleanField(
        default=True, help_text="Its jobs may run on other tenants' idle quota (preempted when it is reclaimed).",
    )
    energy_budget_kwh_month = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0)],
        help_text="Optional: past this energy in a calendar month (UTC), the tenant's fair share is lowered.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__name", "user__username"]

    def __str__(self):
        return f"{self.user} in {self.tenant}"


class TenantQuota(models.Model):
    """A tenant's nominal quota on one GPU type: that many GPUs of the type are its own whenever
    its jobs can use them; while it does not, other tenants may borrow them."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.PROTECT, related_name="tenant_quotas")
    gpus = models.PositiveIntegerField(help_text="GPUs of this type guaranteed to the tenant.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant__name", "gpu_type__name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "gpu_type"], name="tenant_quota_unique")]

    def __str__(self):
        return f"{self.tenant}: {self.gpus} x {self.gpu_type}"


class TenantUsage(models.Model):
    """A tenant's usage with decay (fair_share.py): weighted GPU-hours and energy, each halved
    every SolverConfig.fair_share_half_life_h, and the fair-share factor they give."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="usage")
    gpu_hours = models.FloatField(default=0.0, help_text="Decayed GPU-hours, weighted by GPU type.")
    energy_kwh = models.FloatField(default=0.0, help_text="Decayed energy, kWh.")
    factor = models.FloatField(default=1.0, help_text="Fair-share factor, 0..1 (1: used nothing of its share).")
    updated_at = models.DateTimeField(help_text="Until when usage is counted.")

    def __str__(self):
        return f"{self.tenant}: factor {self.factor:.3f}"


class TenantEnergyDay(models.Model):
    """Energy a tenant's jobs drew on one UTC day (each job's share of its GPUs' measured power)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="energy_days")
    day = models.DateField()
    energy_kwh = models.FloatField(default=0.0)
    gpu_hours = models.FloatField(default=0.0)

    class Meta:
        ordering = ["tenant__name", "day"]
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="tenant_energy_day_unique")]

    def __str__(self):
        return f"{self.tenant} {self.day}: {self.energy_kwh:.3f} kWh"
