"""The genetic algorithm's operators, each alone on a small instance worked out by hand."""
import dataclasses
import random

import pytest

from scheduler.optimizer import genetic
from scheduler.optimizer.capacity import is_feasible
from scheduler.optimizer.cpu_clock import cpu_now
from scheduler.optimizer.genetic_admit import evict, insert
from scheduler.optimizer.genetic_fitness import fitness_for
from scheduler.optimizer.genetic_operators import crossover, decode, descend, mutate, polish, select
from scheduler.optimizer.genetic_repair import repair, swap
from scheduler.optimizer.genetic_room import exchange, offload, relocate, shrink
from scheduler.optimizer.genetic_table import State, build_table
from scheduler.optimizer.ilp_model import admitted_value
from scheduler.optimizer.instance import compile_instance

from .factory import TablePredictions, gpu_type, job, node, problem

SLOW, FAST = gpu_type("slow", tdp=100), gpu_type("fast", tdp=300)


def table_of(jobs, gpus, types, taus, rhos=None, **settings):
    return build_table(compile_instance(problem(jobs, gpus, types, TablePredictions(taus, rhos or {}), **settings)))


def option(table, j, gpu_type, k=1):
    """The choice of job j alone on k GPUs of a type (it must meet T_min)."""
    inst = table.inst
    [i] = [
        i for i in inst.job_options[j] if (inst.all_options[i].gpu_type, inst.all_options[i].num_gpus) == (gpu_type, k)
    ]
    return ("o", i)


def two_types(slow=1, fast=1, jobs=2, priorities=(0, 0)):
    """Jobs of workload a that meet T_min 5 on one slow (100 W) or one fast (300 W) GPU."""
    return table_of([job(n + 1, "a", tmin=5, priority=priorities[n]) for n in range(jobs)],
                    node("slow", "s", slow) + node("fast", "f", fast), [SLOW, FAST],
                    {("a", "slow", 1, True): 6, ("a", "fast", 1, True): 10}, theta=1)


def pair(partner_alone_on=None):
    """Two jobs of one tenant on two fast GPUs: alone 300 W each, sharing one GPU 300 W together."""
    return table_of([job(1, "a", tmin=5), job(2, "a", tmin=5)], node("fast", "f", 2), [FAST],
                    {("a", "fast", 1, True): 10}, {("a", "a", "fast"): 0.6})


# -- the table and the decision it changes --------------------------------------------------

def test_the_table_lists_each_jobs_options_cheapest_first_and_cannot_be_changed():
    table = two_types()
    assert table.opts[0] == (option(table, 0, "slow")[1], option(table, 0, "fast")[1])
    assert table.genes[0] == (option(table, 0, "slow"), option(table, 0, "fast"))
    assert table.mutable == (0, 1) and table.placeable == table.order == (0, 1)
    assert table.types_of[0] == {"slow", "fast"} and table.min_cost == (100.0, 100.0)
    assert table.singles[("slow", "fast")] == (1, 0)  # the last admitted first
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.opts = ()
    with pytest.raises(TypeError):
        table.usage[option(table, 0, "slow")] = ()


def test_a_group_is_taken_and_dropped_by_all_its_jobs_and_a_snapshot_restores_the_decision():
    table = pair()
    [group] = table.inst.job_groups[0]
    state = State(table, [None, None])
    saved = state.snapshot()
    state.take(0, ("g", group))
    assert state.choices == [("g", group)] * 2 and state.ledger.free[("fast", 1)] == 1
    assert state.drop(1) == [0, 1] and state.choices == [None, None] and state.ledger.free[("fast", 1)] == 2
    state.take(0, option(table, 0, "fast"))
    state.restore(saved)
    assert state.choices == [None, None] and state.ledger.free[("fast", 1)] == 2


# -- fitness ----------------------------------------------------------------------------------

def test_one_job_more_outweighs_any_power_saving_and_at_equal_admission_less_power_wins():
    table = two_types()
    fitness = fitness_for(table, [None, None])
    both = fitness([option(table, 0, "fast"), option(table, 1, "slow")])  # 400 W
    one = fitness([option(table, 0, "slow"), None])  # 100 W
    assert 0 < one < both <= 1
    assert fitness([option(table, 0, "slow"), None]) > fitness([option(table, 0, "fast"), None])


# -- insert and evict -------------------------------------------------------------------------

def test_insert_takes_the_cheapest_option_that_fits_and_says_when_none_does():
    table = two_types(jobs=3, priorities=(0, 0, 0))
    state = State(table, [None] * 3)
    assert insert(table, state, 0) and state.choices[0] == option(table, 0, "slow")
    assert insert(table, state, 1) and state.choices[1] == option(table, 1, "fast")
    assert not insert(table, state, 2) and state.choices[2] is None


def test_insert_joins_a_partner_running_alone_on_one_gpu_of_the_groups_type():
    table = pair()
    [group] = table.inst.job_groups[0]
    state = State(table, [None, option(table, 1, "fast")])
    assert insert(table, state, 0)
    assert state.choices == [("g", group)] * 2 and state.ledger.free[("fast", 1)] == 1  # the partner's GPU is reused


def test_a_job_evicts_running_jobs_of_lower_priority_only():
    table = two_types(slow=1, fast=0, priorities=(1, 0))
    high, low = table.inst.jobs[0].priority, table.inst.jobs[1].priority
    assert (high, low) == (1, 0)
    state = State(table, [None, option(table, 1, "slow")])
    assert evict(table, state, 0) == [1] and state.choices == [option(table, 0, "slow"), None]
    equal = two_types(slow=1, fast=0)
    state = State(equal, [None, option(equal, 1, "slow")])
    assert evict(equal, state, 0) == [] and state.choices == [None, option(equal, 1, "slow")]
    assert state.ledger.free[("slow", 1)] == 0


# -- making room --------------------------------------------------------------------------------

def big_and_small():
    """M runs on 2 x-GPUs (one node) or on the one y-GPU; W runs on one x-GPU only."""
    x, y = gpu_type("x", tdp=100), gpu_type("y", tdp=300)
    return table_of([job(1, "m", tmin=5, dj=2), job(2, "w", tmin=5)], node("x", "nx", 2) + node("y", "ny", 1), [x, y],
                    {("m", "x", 2, True): 10, ("m", "y", 1, True): 10, ("w", "x", 1, True): 10}, theta=1)


def test_shrink_moves_a_multi_gpu_job_onto_fewer_gpus_and_offload_then_admits_the_waiting_job():
    table = big_and_small()
    state = State(table, [option(table, 0, "x", 2), None])
    shrink(table, state)
    assert state.choices == [option(table, 0, "y"), None]
    state = State(table, [option(table, 0, "x", 2), None])
    offload(table, state, [1])
    assert state.choices == [option(table, 0, "y"), option(table, 1, "x")]


def test_relocate_moves_a_job_to_an_allowed_type_or_changes_nothing():
    table = two_types(jobs=1)
    state = State(table, [option(table, 0, "slow")])
    assert not relocate(table, state, 0, "slow", onto={"slow"}) and state.choices == [option(table, 0, "slow")]
    assert relocate(table, state, 0, "slow") and state.choices == [option(table, 0, "fast")]
    assert state.ledger.free[("slow", 1)] == 1 and state.ledger.free[("fast", 1)] == 0


def test_exchange_moves_a_single_gpu_job_to_the_released_type_and_remembers_failures():
    table = two_types(jobs=2)
    state = State(table, [option(table, 0, "slow"), None])  # the fast GPU was just released
    assert exchange(table, state, option(table, 1, "slow"), "fast", 1, set())
    assert state.choices == [option(table, 0, "fast"), None] and state.fits(option(table, 1, "slow"))
    full = State(table, [option(table, 0, "slow"), option(table, 1, "fast")])
    tried: set = set()
    assert not exchange(table, full, option(table, 0, "fast"), "slow", 1, tried)  # nothing to move: no room
    assert full.choices == [option(table, 0, "slow"), option(table, 1, "fast")] and len(tried) == 1


# -- repair -------------------------------------------------------------------------------------

def test_repair_admits_into_free_capacity_and_only_deep_repair_evicts():
    table = two_types(slow=1, fast=0, priorities=(1, 0))
    assert repair(table, [None, option(table, 1, "slow")], deep=False) == [None, option(table, 1, "slow")]
    assert repair(table, [None, option(table, 1, "slow")], deep=True) == [option(table, 0, "slow"), None]
    free = two_types()
    assert repair(free, [None, None], deep=False) == [option(free, 0, "slow"), option(free, 1, "fast")]


def test_swap_trades_one_job_on_two_gpus_for_two_of_its_level_on_one_each():
    x = gpu_type("x", tdp=100)
    table = table_of([job(1, "big", tmin=5, dj=2), job(2, "a", tmin=5), job(3, "a", tmin=5)], node("x", "nx", 2), [x],
                     {("big", "x", 2, True): 10, ("a", "x", 1, True): 10}, theta=1)
    state = State(table, [option(table, 0, "x", 2), None, None])
    swap(table, state)
    assert state.choices == [None, option(table, 1, "x"), option(table, 2, "x")]


# -- decode, mutate, crossover, select ----------------------------------------------------------

def test_decode_replaces_genes_that_do_not_fit_or_whose_partners_did_not_choose_the_group():
    table = two_types()
    both_fast = [option(table, 0, "fast"), option(table, 1, "fast")]
    assert decode(table, both_fast) == [option(table, 0, "fast"), option(table, 1, "slow")]
    grouped = pair()
    [group] = grouped.inst.job_groups[0]
    half = decode(grouped, [("g", group), option(grouped, 1, "fast")])
    assert half == [option(grouped, 0, "fast"), option(grouped, 1, "fast")] and is_feasible(grouped.inst, half)
    assert decode(grouped, [("g", group), ("g", group)]) == [("g", group)] * 2


def test_mutate_redraws_genes_at_its_rate_a_group_for_all_its_jobs_and_the_same_seed_alike():
    table = pair()
    [group] = table.inst.job_groups[0]
    genome = [option(table, 0, "fast"), option(table, 1, "fast")]
    assert mutate(table, random.Random(1), genome, 0.0) == genome
    first_only = dataclasses.replace(table, mutable=(0,))  # only job 0's gene is redrawn
    children = [mutate(first_only, random.Random(seed), genome, 1.0) for seed in range(20)]
    assert {child[0] for child in children} == set(table.genes[0])
    assert all(child == [("g", group)] * 2 for child in children if child[0] == ("g", group))
    assert mutate(table, random.Random(5), genome, 0.5) == mutate(table, random.Random(5), genome, 0.5)


def test_crossover_takes_each_gene_from_one_parent():
    a, b = [("o", 1)] * 50, [("o", 2)] * 50
    child = crossover(random.Random(3), a, b)
    assert set(child) == {("o", 1), ("o", 2)} and child == crossover(random.Random(3), a, b)
    assert crossover(random.Random(3), a, a) == a


def test_tournament_selection_returns_the_fittest_of_its_draw():
    scored = [(0.1, 0, ["low"]), (0.9, 1, ["high"]), (0.5, 2, ["mid"])]
    assert select(random.Random(0), scored) == ["high"]  # all three drawn
    assert select(random.Random(0), scored[:1]) == ["low"]
    many = [(float(k), k, [k]) for k in range(100)]
    picks = [select(random.Random(seed), many)[0] for seed in range(30)]
    assert min(picks) >= 2 and len(set(picks)) > 1  # the best of 3, not always the best of all


# -- local search -------------------------------------------------------------------------------

def test_descend_moves_jobs_to_cheaper_options_and_partners_onto_one_shared_gpu():
    table = two_types(jobs=1)
    assert descend(table, [option(table, 0, "fast")]) == [option(table, 0, "slow")]
    grouped = pair()
    [group] = grouped.inst.job_groups[0]
    assert descend(grouped, [option(grouped, 0, "fast"), option(grouped, 1, "fast")]) == [("g", group)] * 2


def test_polish_admits_and_then_saves_power():
    table = two_types(slow=1, fast=1, jobs=1)
    polished = polish(table, [None])
    assert polished == [option(table, 0, "slow")] and admitted_value(table.inst, polished) == 1


# -- the generations ------------------------------------------------------------------------------

def test_the_generation_budget_bounds_the_work_and_the_mutation_rate_about_three_genes():
    assert genetic.generation_budget(60, 24, 10) == 60
    assert genetic.generation_budget(60, 24, 1000) == 4
    assert genetic.generation_budget(60, 24, 6144) == genetic.MIN_GENERATIONS
    assert genetic.mutation_rate(two_types()) == 0.5
    assert genetic.mutation_rate(two_types(jobs=12, priorities=(0,) * 12)) == 0.25


def test_evolve_keeps_the_elite_and_stops_at_the_deadline():
    table = two_types(jobs=3, priorities=(0, 0, 0))
    fitness = fitness_for(table, [None] * 3)
    best = [option(table, 0, "slow"), option(table, 1, "fast"), None]
    population = [best] + [[None] * 3] * 4
    scored, generations, timed_out = genetic.evolve(
        table, random.Random(0), fitness, population, 5, 0.5, cpu_now() + 60
    )
    assert generations == 5 and not timed_out and scored[0][0] >= fitness(best)
    assert len(scored) == len(population)
    _, generations, timed_out = genetic.evolve(table, random.Random(0), fitness, population, 5, 0.5, cpu_now() - 1)
    assert generations == 0 and timed_out
