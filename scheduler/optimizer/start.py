"""A decision handed to a subproblem as plain tuples (Problem.admission_start), so that a
coordinator can tell a cell what its global decision gives the cell's jobs, and the cell's ILP
can start from it: where it admits every job of a level, the cell needs no admission program
for that level (at 6144 GPUs every cell's jobs are exactly its share of the global decision,
and the six admission programs took 0.6-0.8 s). Rows name jobs, GPU types and partners, not
indices, because the cell's instance numbers its options and groups afresh."""
from .choices import Choice
from .instance import Instance

Row = tuple[str, str, int, bool, tuple[str, ...]]  # job id, GPU type, GPUs, consolidated, partner ids


def rows_of(inst: Instance, choices: list[Choice], job_ids: set[str]) -> tuple[Row, ...]:
    """The decision's rows for the given jobs (a group only when all of its jobs are given)."""
    rows = []
    for j, choice in enumerate(choices):
        job = inst.jobs[j]
        if choice is None or job.id not in job_ids:
            continue
        if choice[0] == "g":
            group = inst.groups[choice[1]]
            partners = tuple(inst.jobs[x].id for x in group.partners_of(j))
            if set(partners) <= job_ids:
                rows.append((job.id, group.gpu_type, 1, True, partners))
        else:
            opt = inst.all_options[choice[1]]
            rows.append((job.id, opt.gpu_type, opt.num_gpus, opt.consolidated, ()))
    return tuple(rows)


def choices_of(inst: Instance, rows: tuple[Row, ...]) -> list[Choice]:
    """The rows as choices of this instance's options meeting T_min and groups; a row with no
    such option or group (a configuration this instance does not offer) leaves its job out."""
    index = {job.id: j for j, job in enumerate(inst.jobs)}
    choices: list[Choice] = [None] * len(inst.jobs)
    for job_id, gpu_type, num_gpus, consolidated, partners in rows:
        j = index.get(job_id)
        if j is None:
            continue
        if not partners:
            choices[j] = next((("o", i) for i in inst.job_options[j] if (
                inst.all_options[i].gpu_type, inst.all_options[i].num_gpus, inst.all_options[i].consolidated,
            ) == (gpu_type, num_gpus, consolidated)), None)
        else:
            choices[j] = next((("g", p) for p in inst.job_groups[j] if inst.groups[p].gpu_type == gpu_type
                               and {inst.jobs[x].id for x in inst.groups[p].partners_of(j)} == set(partners)), None)
    return choices
