"""Why a job stays pending: every job a solver leaves out gets one of these, never silence."""
from .feasibility import memory_fits, why_below_tmin, why_no_memory
from .instance import Instance

NO_GPUS = "The cluster has no healthy GPU on a ready node."
NO_PREDICTION = "No throughput is known for {workload} on any GPU type in the cluster ({types})."
FULL = (
    "Not admitted this round: the capacity it needs (at least {k} x {gpu_type}) went to jobs of higher or "
    "equal priority."
)
POLICY = "Not admitted by the {solver} policy: none of its configurations fitted the capacity left."


def pending_reason(inst: Instance, j: int, solver: str, optimising: bool) -> str:
    job = inst.jobs[j]
    if not inst.capacity:
        return NO_GPUS
    need = inst.memory[j]
    specs = {t: inst.problem.gpu_types[t] for t in inst.capacity}
    if not any(memory_fits(need, spec) for spec in specs.values()):
        return why_no_memory(need, specs)
    if not inst.job_all_options[j] and not inst.job_groups[j]:
        return NO_PREDICTION.format(workload=job.workload, types=", ".join(inst.capacity))
    if not inst.job_options[j] and not inst.job_groups[j]:
        best = max((inst.all_options[i] for i in inst.job_all_options[j]), key=lambda o: o.tau)
        return why_below_tmin(job, best.tau, best.num_gpus, best.gpu_type)
    if not optimising:
        return POLICY.format(solver=solver)
    if inst.job_options[j]:
        least = min((inst.all_options[i] for i in inst.job_options[j]), key=lambda o: (o.num_gpus, o.cost))
        return FULL.format(k=least.num_gpus, gpu_type=least.gpu_type)
    return FULL.format(k="a shared 1", gpu_type=inst.groups[inst.job_groups[j][0]].gpu_type)
