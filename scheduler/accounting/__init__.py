"""Energy and usage accounting (docs/accounting.md): who drew the cluster's energy and used its
GPUs. A periodic pass (services.accounting_pass, run by Celery beat) integrates each
allocation's share of its GPU's measured power (energy.py, pure) into Job.energy_kwh and
TenantEnergyDay, and updates each tenant's decayed usage and fair-share factor (usage.py),
which orders admission within a priority level (optimizer/admission.py)."""
