"""A decision handed to a subproblem as plain tuples (Problem.admission_start), so that a
coordinator can tell a cell what its global decision gives the cell's jobs, and the cell's ILP
can start from it: where it admits every job of a level, the cell needs no admission program
for that level (at 6144 GPUs every cell's jobs are exactly its share of the global decision,
and the six admission programs took 0.6-0.8 s). Rows name jobs, GPU types and partners, not
indices, because the cell's instance numbers its options and pairs afresh."""
from .choices import Choice
from .instance import Instance

Row = tuple[str, str, int, bool, str | None]  # job id, GPU type, GPUs, consolidated, partner id


def rows_of(inst: Instance, choices: list[Choice], job_ids: set[str]) -> tuple[Row, ...]:
    """The decision's rows for the given jobs (a pair only when both of its jobs are given)."""
    rows = []
    for j, choice in enumerate(choices):
        job = inst.jobs[j]
        if choice is None or job.id not in job_ids:
            continue
        if choice[0] == "p":
            pair = inst.pairs[choice[1]]
            partner = inst.jobs[pair.partner_of(j)].id
            if partner in job_ids:
                rows.append((job.id, pair.gpu_type, 1, True, partner))
        else:
            opt = inst.all_options[choice[1]]
            rows.append((job.id, opt.gpu_type, opt.num_gpus, opt.consolidated, None))
    return tuple(rows)


def choices_of(inst: Instance, rows: tuple[Row, ...]) -> list[Choice]:
    """The rows as choices of this instance's options meeting T_min and pairs; a row with no
    such option or pair (a configuration this instance does not offer) leaves its job out."""
    index = {job.id: j for j, job in enumerate(inst.jobs)}
    choices: list[Choice] = [None] * len(inst.jobs)
    for job_id, gpu_type, num_gpus, consolidated, partner in rows:
        j = index.get(job_id)
        if j is None:
            continue
        if partner is None:
            choices[j] = next((("o", i) for i in inst.job_options[j] if (
                inst.all_options[i].gpu_type, inst.all_options[i].num_gpus, inst.all_options[i].consolidated,
            ) == (gpu_type, num_gpus, consolidated)), None)
        else:
            choices[j] = next((("p", p) for p in inst.job_pairs[j] if inst.pairs[p].gpu_type == gpu_type
                               and inst.jobs[inst.pairs[p].partner_of(j)].id == partner), None)
    return choices
