"""Why a job stays pending: every job a solver leaves out gets one of these, never silence."""
from .admission_keeps import KEEPS_WORK_S
from .feasibility import memory_fits, uncertainty, why_below_tmin, why_margin_held, why_no_memory
from .instance import Instance
from .quotas import quota_reason

NO_GPUS = "The cluster has no healthy GPU on a ready node."
NO_PREDICTION = "No throughput is known for {workload} on any GPU type in the cluster ({types})."
FULL = (
    "Not admitted this round: the capacity it needs (at least {k} x {gpu_type}) went to jobs of higher or "
    "equal priority."
)
NOT_SURE = "No configuration is known to reach T_min = {tmin:g} steps/s within D_j = {dj} GPU(s):"
POLICY = "Not admitted by the {solver} policy: none of its configurations fitted the capacity left."
FAIR_SHARE_AFTER = (
    " Its tenant's fair-share factor is {factor:.2f}: within its priority level, jobs of tenants that used less "
    "of their share went first ({tenants})."
)
KEPT_AFTER = (
    " {n} running job(s) on {types} would lose over {hours:g} GPU-hours of work each if moved: not moved for it."
)
PROBE_NO_TYPE = "Probe on {gpu_type}: the cluster has no healthy GPU of that type on a ready node."
PROBE_NO_ROOM = "Probe on {gpu_type}: no {k} x {gpu_type} fits its memory and layout in the cluster."
PROBE_FULL = (
    "Probe on {k} x {gpu_type} not started this round: probes only take GPUs every other job leaves free, "
    "and none were."
)


def pending_reason(inst: Instance, j: int, solver: str, optimising: bool, choices: list | None = None,
                   kept: dict[int, list] | None = None) -> str:
    """Why job j waits; `choices`: the decision (as placed), for the quota reasons; `kept`: the
    running jobs the solver's admission kept where they run (admission_keeps.kept)."""
    job = inst.jobs[j]
    if not inst.capacity:
        return NO_GPUS
    if job.probe:
        return _probe_reason(inst, j)
    need = inst.memory[j]
    specs = {t: inst.problem.gpu_types[t] for t in inst.capacity if job.only_gpu_type in (None, t)}
    if not any(memory_fits(need, spec) for spec in specs.values()):
        return why_no_memory(need, specs) if specs else PROBE_NO_TYPE.format(gpu_type=job.only_gpu_type)
    if not inst.job_all_options[j] and not inst.job_groups[j]:
        return NO_PREDICTION.format(workload=job.workload, types=", ".join(specs))
    if not inst.job_options[j] and not inst.job_groups[j]:
        held = _margin_held(inst, j)
        if held:
            return NOT_SURE.format(tmin=job.min_throughput, dj=job.max_gpus) + held
        best = max((inst.all_options[i] for i in inst.job_all_options[j]), key=lambda o: o.tau)
        return why_below_tmin(job, best.tau, best.num_gpus, best.gpu_type)
    quota = _quota_reason(inst, j, choices) if choices is not None else None
    if quota:
        return quota
    if not optimising:
        return POLICY.format(solver=solver)
    if inst.job_options[j]:
        least = min((inst.all_options[i] for i in inst.job_options[j]), key=lambda o: (o.num_gpus, o.cost))
        full = FULL.format(k=least.num_gpus, gpu_type=least.gpu_type) + _margin_held(inst, j)
    else:
        full = FULL.format(k="a shared 1", gpu_type=inst.groups[inst.job_groups[j][0]].gpu_type)
    return full + _kept_after(inst, j, kept or {}) + _fair_share_after(inst, j, choices)


def _kept_after(inst: Instance, j: int, kept: dict[int, list]) -> str:
    """Where running jobs of a higher admission level on the GPU types job j could take were kept
    from moving for it (admission_keeps.py), a sentence saying so ('' otherwise)."""
    types = {inst.all_options[i].gpu_type for i in inst.job_options[j]}
    types |= {inst.groups[p].gpu_type for p in inst.job_groups[j]}
    on = [inst.type_of(stays[0]) for k, stays in kept.items() if inst.jobs[k].priority > inst.jobs[j].priority]
    on = [t for t in on if t in types]
    if not on:
        return ""
    return KEPT_AFTER.format(n=len(on), types=", ".join(sorted(set(on))), hours=KEEPS_WORK_S / 3600)


def _fair_share_after(inst: Instance, j: int, choices: list | None) -> str:
    """Where jobs of its priority level from tenants with a higher fair-share factor were
    admitted, a sentence saying so ('' otherwise): fair share ordered the admission."""
    if choices is None:
        return ""
    job = inst.jobs[j]
    ahead = sorted({inst.jobs[x].tenant for x, c in enumerate(choices)
                    if c is not None and inst.jobs[x].priority == job.priority
                    and inst.jobs[x].tenant != job.tenant and inst.jobs[x].fair_share > job.fair_share})
    return FAIR_SHARE_AFTER.format(factor=job.fair_share, tenants=", ".join(ahead)) if ahead else ""


def _quota_reason(inst: Instance, j: int, choices: list) -> str | None:
    """The quota reason (quotas.quota_reason), from the fewest GPUs the job needs on each type."""
    needs: dict[str, int] = {}
    for i in inst.job_options[j]:
        opt = inst.all_options[i]
        needs[opt.gpu_type] = min(needs.get(opt.gpu_type, opt.num_gpus), opt.num_gpus)
    for p in inst.job_groups[j]:
        needs[inst.groups[p].gpu_type] = 1
    return quota_reason(inst, j, choices, needs)


def _probe_reason(inst: Instance, j: int) -> str:
    """Why a probe waits: its type is missing, it fits no block of it, or other jobs took the room."""
    job = inst.jobs[j]
    gpu_type = job.only_gpu_type or "any type"
    if job.only_gpu_type is not None and job.only_gpu_type not in inst.capacity:
        return PROBE_NO_TYPE.format(gpu_type=gpu_type)
    if not inst.job_options[j]:
        return PROBE_NO_ROOM.format(k=job.max_gpus, gpu_type=gpu_type)
    least = min((inst.all_options[i] for i in inst.job_options[j]), key=lambda o: o.num_gpus)
    return PROBE_FULL.format(k=least.num_gpus, gpu_type=least.gpu_type)


def _margin_held(inst: Instance, j: int) -> str:
    """Where the job's fastest option held off by the unmeasured-type margin would reach T_min on its
    prediction alone, a sentence saying so ('' otherwise)."""
    job = inst.jobs[j]
    held = [inst.all_options[i] for i in inst.job_all_options[j]
            if not inst.all_options[i].meets_slo and inst.all_options[i].tau >= job.min_throughput]
    if not held:
        return ""
    best = max(held, key=lambda o: o.tau)
    log_sd, _ = uncertainty(inst.problem.predictions, job.workload, best.gpu_type, best.num_gpus, best.consolidated)
    return why_margin_held(job, best.tau, log_sd, best.gpu_type, inst.problem.settings)
