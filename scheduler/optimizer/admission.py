"""Admission values: how much admitting each job is worth, so that maximising the admitted
value admits by priority first (lexicographically) and, with fairness on, prefers within a
priority level the tenants with fewer jobs in that level.

A job of a priority level is worth more than every job of all lower levels together (twice
their sum plus one, an integer, so without fairness the admitted value is integral and the
solver can stop as soon as its bound is less than one lowest-priority job away), so no number
of low-priority jobs outweighs one of higher priority. Fairness adds at most half a job's
worth to a level, so it only breaks ties between equally many admitted jobs. So does the work
at risk (keep_work.py): within a level, RISK_SHARE of a job's worth shared in proportion to the
GPU-seconds each placed job would lose if stopped, so that where a level cannot keep all of its
jobs (a higher priority preempts it) those losing the least work are the ones left out.

Fair share over time (fair_share.py) weighs more than a tie-break, as Slurm's fair-share factor
orders its queue: each job gains FAIR_SHARE_WEIGHT of a job's worth per unit its tenant's factor
stands above the level's lowest, so a job of a tenant that used none of its share (factor 1)
next to one that used far more (factor near 0) is worth up to 1.5 jobs, and three such jobs
outweigh four of the tenant ahead; more jobs still win beyond that (an operator's count of jobs
running is not given away for fair share). Each level is worth more than all lower levels'
values together, bonuses included (twice their sum plus one), so levels stay lexicographic.
With equal factors in a level (all 1.0 while nothing is accounted) the fair-share bonus is zero.
"""
from collections import Counter, defaultdict
from dataclasses import replace

from .problem import JobSpec

FAIRNESS_SHARE = 0.5
RISK_SHARE = 0.2  # with FAIRNESS_SHARE below one job's worth: ties only
FAIR_SHARE_WEIGHT = 0.5  # of a job's worth per unit of factor above the level's lowest (factors are in [0, 1])


def admission_values(jobs: tuple[JobSpec, ...], fairness: bool, placeable: list[bool]) -> list[float]:
    by_level: dict[int, list[int]] = defaultdict(list)
    for j, job in enumerate(jobs):
        if placeable[j]:
            by_level[job.priority].append(j)
    values = [0.0] * len(jobs)
    below = 0.0
    for level in sorted(by_level):
        members = by_level[level]
        level_value = 1.0 + 2.0 * below
        tenants = Counter(jobs[j].tenant for j in members)
        at_risk = sum(jobs[j].work_at_risk for j in members)
        share = _fair_share_bonuses([jobs[j].fair_share for j in members])
        for j, fair in zip(members, share, strict=True):
            bonus = FAIRNESS_SHARE / (len(members) * tenants[jobs[j].tenant]) if fairness else 0.0
            bonus += RISK_SHARE * jobs[j].work_at_risk / at_risk if at_risk > 0 else 0.0
            values[j] = level_value * (1.0 + bonus + fair)
        below += sum(values[j] for j in members)
    return values


def _fair_share_bonuses(factors: list[float]) -> list[float]:
    """FAIR_SHARE_WEIGHT per unit of each factor's excess over the lowest (all zero when the
    factors are equal)."""
    lowest = min(factors)
    return [FAIR_SHARE_WEIGHT * (f - lowest) for f in factors]


def has_tie_breaks(jobs: tuple[JobSpec, ...]) -> bool:
    """Some of the jobs (of a level) carry work at risk or differ in fair share: their values
    are not whole jobs (the ILP must resolve hundredths of a job)."""
    return any(job.work_at_risk > 0 for job in jobs) or len({job.fair_share for job in jobs}) > 1



def probes_last(jobs: tuple[JobSpec, ...]) -> tuple[JobSpec, ...]:
    """The jobs with every probe (exploration.py, profiling campaigns) moved below the lowest
    non-probe admission level, in the same order among themselves: a probe is admitted only with
    what every other job leaves, and any other job displaces it. Every solver reads levels from
    JobSpec.priority, so this one shift is the whole rule."""
    probes = [job.priority for job in jobs if job.probe]
    others = [job.priority for job in jobs if not job.probe]
    if not probes or not others or max(probes) < min(others):
        return jobs
    shift = min(others) - max(probes) - 1
    return tuple(replace(job, priority=job.priority + shift) if job.probe else job for job in jobs)
