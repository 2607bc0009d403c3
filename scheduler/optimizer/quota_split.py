"""How much of a decision counts within quotas, at best: the split the ILP's quota and pool
copies can make (ilp_model._in_quota_terms), computed exactly for a decision that no program
solved (the greedy decision, an admission start, a fallback).

Per GPU type, each tenant's chosen items (a choice, its GPUs, its value) go within its own
quota, within the cohort's pool (quotas.Quotas.pool, shared by every tenant that may borrow) or
nowhere; the split maximises the value counted. Counting less (taking choices by decreasing
value while they fit, or a tenant's quota first and the pool after) made a decision that keeps
every running job look worse within quotas than one that preempts some, and an admission stage
then replaced it (docs/optimization.md, "Quotas").
"""
import numpy as np

Item = tuple[object, int, float]  # (choice, GPUs, value)


def best_fill(items: list[Item], capacity: int) -> list:
    """The choices of the items of the most total value whose GPUs fit the capacity (a 0/1
    knapsack by dynamic programming over the GPUs used; all of them where they all fit)."""
    items = [item for item in items if item[1] <= capacity]
    if sum(n for _, n, _ in items) <= capacity:
        return [choice for choice, _, _ in items]
    best = np.zeros(capacity + 1)
    taken = np.zeros((len(items), capacity + 1), dtype=bool)
    for k, (_, n, value) in enumerate(items):
        with_it = best[: capacity + 1 - n] + value
        better = with_it > best[n:] + 1e-9
        best[n:] = np.where(better, with_it, best[n:])
        taken[k, n:] = better
    out, left = [], capacity
    for k in range(len(items) - 1, -1, -1):
        if taken[k, left]:
            out.append(items[k][0])
            left -= items[k][1]
    return out[::-1]


def split_type(items: dict[str, list[Item]], owns: dict[str, int], pool: int, may_pool: set[str]) -> list[tuple]:
    """One GPU type: per tenant its items, its quota `owns[tenant]`; the pool's GPUs, which the
    tenants in `may_pool` share. Returns the counted choices as (choice, in the pool), the most
    value that fits: per tenant the best value for each number of pool GPUs it may take (a
    knapsack over its quota and those GPUs), then the pool's GPUs split among the tenants."""
    tenants = sorted(items)
    if pool <= 0 or not may_pool.intersection(tenants):
        return [(choice, False) for t in tenants for choice in best_fill(items[t], owns.get(t, 0))]
    tables = {t: _own_and_pool(items[t], owns.get(t, 0), pool if t in may_pool else 0) for t in tenants}
    total = np.zeros(pool + 1)  # the best value of the tenants so far with at most p pool GPUs
    gave = []  # per tenant, for each p, the pool GPUs it takes in that best
    for t in tenants:
        curve = tables[t][0][-1]  # its best with its whole quota and at most q pool GPUs
        q = np.arange(len(curve))
        new, take = total.copy(), np.zeros(pool + 1, dtype=int)
        for p in range(pool + 1):
            upto = q[q <= p]
            values = total[p - upto] + curve[upto]
            k = int(np.argmax(values > values.max() - 1e-9))  # the fewest pool GPUs for the best
            new[p], take[p] = values[k], upto[k]
        total = new
        gave.append(take)
    out, left = [], pool
    for t, take in zip(reversed(tenants), reversed(gave)):
        mine = int(take[left])
        out += _backtrack(items[t], tables[t], owns.get(t, 0), mine)
        left -= mine
    return out


def _own_and_pool(items: list[Item], own: int, pool: int):
    """(best[a][b], choice[k][a][b]): the most value of the items with at most a GPUs within the
    quota and b in the pool, and what item k did in it (0 nowhere, 1 quota, 2 pool)."""
    best = np.zeros((own + 1, pool + 1))
    did = np.zeros((len(items), own + 1, pool + 1), dtype=np.int8)
    for k, (_, n, value) in enumerate(items):
        new = best.copy()
        if n <= own:
            in_quota = best[: own + 1 - n, :] + value
            better = in_quota > new[n:, :] + 1e-9
            new[n:, :] = np.where(better, in_quota, new[n:, :])
            did[k, n:, :][better] = 1
        if n <= pool:
            in_pool = best[:, : pool + 1 - n] + value
            better = in_pool > new[:, n:] + 1e-9
            new[:, n:] = np.where(better, in_pool, new[:, n:])
            did[k, :, n:][better] = 2
        best = new
    return best, did


def _backtrack(items: list[Item], table, own: int, pool: int) -> list[tuple]:
    out, a, b = [], own, pool
    did = table[1]
    for k in range(len(items) - 1, -1, -1):
        where = did[k, a, b]
        if where == 1:
            out.append((items[k][0], False))
            a -= items[k][1]
        elif where == 2:
            out.append((items[k][0], True))
            b -= items[k][1]
    return out[::-1]
