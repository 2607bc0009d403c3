"""Writes of tenants' settings by an admin: shares, borrowing, energy budget and the quota set.
Each writes in one transaction and tells open Tenants pages (live.tenants_changed); input is
validated before (scheduler/api/tenants.py), and the models' own validators run again here."""
from django.db import transaction

from ..models import Tenant, TenantQuota
from . import live

#: The settings an admin may change through tenant_update.
SETTINGS = ("shares", "may_borrow", "energy_budget_kwh_month")


def tenant_update(*, tenant: Tenant, values: dict) -> Tenant:
    """Set some of SETTINGS; the others keep their value."""
    unknown = set(values) - set(SETTINGS)
    if unknown:
        raise ValueError(f"not a tenant setting: {sorted(unknown)}")
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        for field, value in values.items():
            setattr(tenant, field, value)
        tenant.full_clean()
        tenant.save(update_fields=list(values) or None)
        live.tenants_changed([tenant.pk])
    return tenant


def tenant_quotas_replace(*, tenant: Tenant, quotas: dict) -> list[TenantQuota]:
    """Replace the tenant's whole quota set by {GpuType: gpus} (empty: no quota). A quota of 0
    GPUs is kept as a row: the admin said "none of this type is guaranteed" on purpose."""
    with transaction.atomic():
        Tenant.objects.select_for_update().get(pk=tenant.pk)
        TenantQuota.objects.filter(tenant=tenant).delete()
        rows = TenantQuota.objects.bulk_create(
            TenantQuota(tenant=tenant, gpu_type=gpu_type, gpus=gpus)
            for gpu_type, gpus in sorted(quotas.items(), key=lambda item: item[0].name)
        )
        live.tenants_changed([tenant.pk])
    return rows
