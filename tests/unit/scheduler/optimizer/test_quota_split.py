"""The in-quota count of a decision (quota_split.py) against every assignment of its choices to
a quota, the pool or nowhere, on random small types: it counts the most that fits, as the ILP's
quota and pool copies can, and its split fits."""
import itertools
from collections import defaultdict

import pytest
from hypothesis import given, settings, strategies as st

from scheduler.optimizer.quota_split import best_fill, split_type

TENANTS = ("t", "u", "v")


@st.composite
def one_type(draw):
    """Up to 7 choices over 1-3 tenants (1, 2 or 4 GPUs, values 1-1.5), quotas 0-4, a pool 0-4,
    and the tenants that may take from the pool."""
    tenants = TENANTS[: draw(st.integers(1, 3))]
    items: dict[str, list] = defaultdict(list)
    for k in range(draw(st.integers(0, 7))):
        tenant = draw(st.sampled_from(tenants))
        items[tenant].append((f"c{k}", draw(st.sampled_from((1, 2, 4))), draw(st.sampled_from((1.0, 1.2, 1.5)))))
    owns = {t: draw(st.integers(0, 4)) for t in tenants}
    may_pool = {t for t in tenants if draw(st.booleans())}
    return dict(items), owns, draw(st.integers(0, 4)), may_pool


def brute_force(items, owns, pool, may_pool) -> float:
    flat = [(t, n, v) for t, its in items.items() for _, n, v in its]
    best = 0.0
    for where in itertools.product((0, 1, 2), repeat=len(flat)):  # nowhere, quota, pool
        own_use, pool_use, value = defaultdict(int), 0, 0.0
        for (t, n, v), w in zip(flat, where):
            if w == 2 and t not in may_pool:
                break
            own_use[t] += n if w == 1 else 0
            pool_use += n if w == 2 else 0
            value += v if w else 0.0
        else:
            if pool_use <= pool and all(own_use[t] <= owns[t] for t in own_use):
                best = max(best, value)
    return best


@settings(max_examples=300, deadline=None)
@given(one_type())
def test_the_split_counts_the_most_that_fits_and_fits(case):
    items, owns, pool, may_pool = case
    split = split_type(items, owns, pool, may_pool)
    of = {choice: (t, n, v) for t, its in items.items() for choice, n, v in its}
    assert len({choice for choice, _ in split}) == len(split)  # each choice counted once
    own_use, pool_use = defaultdict(int), 0
    for choice, pooled in split:
        t, n, _ = of[choice]
        if pooled:
            assert t in may_pool
            pool_use += n
        else:
            own_use[t] += n
    assert pool_use <= pool and all(own_use[t] <= owns[t] for t in own_use)
    assert sum(of[choice][2] for choice, _ in split) == pytest.approx(brute_force(items, owns, pool, may_pool))


def test_best_fill_takes_the_best_knapsack_and_skips_what_never_fits():
    """Capacity 4: a 4-GPU choice (1.5) against two 2-GPU ones (1.2 + 1.2 = 2.4); an 8-GPU
    choice fits nowhere."""
    items = [("big", 4, 1.5), ("a", 2, 1.2), ("b", 2, 1.2), ("huge", 8, 9.0)]
    assert best_fill(items, 4) == ["a", "b"]
    assert best_fill(items[:1], 4) == ["big"]
