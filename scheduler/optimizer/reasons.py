"""Why a job stays pending: every job a solver leaves out gets one of these, never silence."""
from .instance import Instance

NO_GPUS = "The cluster has no healthy GPU on a ready node."
NO_MEMORY = (
    "Needs {need:g} GB of GPU memory per GPU: more than any GPU type in the cluster has ({types})."
)
NO_PREDICTION = "No throughput is known for {workload} on any GPU type in the cluster ({types})."
BELOW_TMIN = (
    "No GPU type reaches T_min = {tmin:g} steps/s within D_j = {dj} GPU(s): the best is {best:.3g} steps/s "
    "on {k} x {gpu_type}."
)
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
    if need is not None and all(need > inst.problem.gpu_types[t].memory_gb for t in inst.capacity):
        types = ", ".join(f"{t} {inst.problem.gpu_types[t].memory_gb:g} GB" for t in inst.capacity)
        return NO_MEMORY.format(need=need, types=types)
    if not inst.job_all_options[j] and not inst.job_groups[j]:
        return NO_PREDICTION.format(workload=job.workload, types=", ".join(inst.capacity))
    if not inst.job_options[j] and not inst.job_groups[j]:
        best = max((inst.all_options[i] for i in inst.job_all_options[j]), key=lambda o: o.tau)
        return BELOW_TMIN.format(
            tmin=job.min_throughput, dj=job.max_gpus, best=best.tau, k=best.num_gpus, gpu_type=best.gpu_type
        )
    if not optimising:
        return POLICY.format(solver=solver)
    if inst.job_options[j]:
        least = min((inst.all_options[i] for i in inst.job_options[j]), key=lambda o: (o.num_gpus, o.cost))
        return FULL.format(k=least.num_gpus, gpu_type=least.gpu_type)
    return FULL.format(k="a shared 1", gpu_type=inst.groups[inst.job_groups[j][0]].gpu_type)
