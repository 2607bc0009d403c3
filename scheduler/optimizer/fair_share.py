"""Fair share over time, as Slurm's classic fair-share factor (docs/accounting.md has a worked
example): each tenant's usage decays with a half-life, and its factor is

    F = 2 ** -(U / S)

where U is its share of everyone's decayed usage and S its share of everyone's shares (its
entitled fraction of the cluster). F = 1: it used nothing; 0.5: it used exactly its share;
towards 0: far more. The factor orders admission within a priority level (admission.py);
the control plane (scheduler.accounting) and the simulator both compute it with these functions.
"""


def decayed(value: float, elapsed_s: float, half_life_s: float) -> float:
    """`value` after `elapsed_s` of decay: halved every `half_life_s` (> 0)."""
    if elapsed_s <= 0:
        return value
    return value * 0.5 ** (elapsed_s / half_life_s)


def factor(usage: float, total_usage: float, shares: float, total_shares: float) -> float:
    """The fair-share factor of a tenant with `shares` of `total_shares` that used `usage` of
    `total_usage` (decayed); 1.0 while nobody has used anything, 0.0 with no shares."""
    if shares <= 0 or total_shares <= 0:
        return 0.0
    if total_usage <= 0:
        return 1.0
    return 2.0 ** -((usage / total_usage) / (shares / total_shares))


def factors(usage: dict[str, float], shares: dict[str, float]) -> dict[str, float]:
    """Every tenant's factor (tenants with shares; usage of others counts in the total)."""
    total_usage, total_shares = sum(usage.values()), sum(shares.values())
    return {tenant: factor(usage.get(tenant, 0.0), total_usage, s, total_shares) for tenant, s in shares.items()}


#: The GPU whose hour is one unit of usage: a V100 (SXM2, 300 W). A type's GPU-hour counts
#: its TDP over this (Slurm's TRESBillingWeights): a datasheet fact every type has, known before
#: anything runs on it, and the same in the control plane and the simulator; an H100 (700 W)
#: hour is 2.33 units, a T4 (70 W) hour 0.23.
REFERENCE_TDP_W = 300.0


def gpu_hour_weight(tdp_w: float) -> float:
    """Usage units per GPU-hour of a type whose board power limit is `tdp_w`."""
    return tdp_w / REFERENCE_TDP_W


def budget_shares(shares: float, budget_kwh: float | None, month_kwh: float) -> float:
    """A tenant's shares for the factor: as set while its energy this month is within its budget
    (or it has none), else lowered in proportion, shares x budget / energy, so that a tenant at
    twice its budget counts half its shares (a budget of 0: none once it draws anything)."""
    if budget_kwh is None or month_kwh <= budget_kwh:
        return shares
    return shares * budget_kwh / month_kwh
