"""The engine's rounds for inference services (engine.Simulation takes them; docs/simulation.md,
"Inference services"): a policy's replicas added, re-targeted and retired as serving.py plans
them, the training partners a replica's rising T_min pushes away, `dedicated`'s provisioning,
and the replicas as the service watch sees them."""
from dataclasses import replace

from scheduler.optimizer.problem import Placement
from scheduler.serving.replicas import fastest_single_gpu, surest_single_gpu

from .policies import DEDICATED
from .service_watch import ReplicaNow
from .serving import dedicated_plan, replica_job
from .work import JobState, start_run


class CannotProvision(ValueError):
    """`dedicated` cannot give a service GPUs of its own for its peak on this cluster."""


class ServiceRounds:
    """Methods of engine.Simulation (its state: active, states, predictions, serving, reserved...)."""

    def _serve(self, t: float) -> bool:
        """The round's services (serving.py): dedicated replicas once, at the start; shared ones
        re-planned every round. True when a replica or a T_min changed."""
        if self.policy.services == DEDICATED:
            if self.reserved:
                return False
            self._provision(t)
            return True
        running = {}
        for s in self.active.values():
            if s.job.service is not None and s.placement is not None and not s.overhead_left_s:
                running.setdefault(s.job.service, []).append(s.placement.predicted_throughput)
        plans = self.serving.plan(t, self._best_speed, running, self._sure_speed)
        changed = False
        for sid, plan in plans.items():
            service = self.service_of[sid]
            changed |= self._set_replicas(service, plan.replicas, plan.steps_per_s, t)
        return changed

    def _best_speed(self, workload: str) -> float | None:
        """The fastest single-GPU speed the policy predicts for the workload on any type."""
        found = fastest_single_gpu(self.predictions, workload, self.sc.gpu_types)
        return found[1] if found else None

    def _sure_speed(self, workload: str) -> float | None:
        """The fastest single-GPU speed of the workload a replica may count on (its T_min's cap)."""
        return surest_single_gpu(self.predictions, workload, self.sc.gpu_types, self.settings)

    def _set_replicas(self, service, count: int, t_min: float, t: float) -> bool:
        mine = [s for s in self.active.values() if s.job.service == service.id]
        changed = False
        for state in mine:
            if state.job.min_throughput != t_min:
                state.job, changed = replace(state.job, min_throughput=t_min), True
        while len(mine) < count:
            mine.append(self._new_replica(service, t_min, t))
            changed = True
        # Fewer: the unplaced ones first, then the newest.
        for state in sorted(mine, key=lambda s: (s.placement is None, s.job.arrival_s))[count:]:
            self._retire(state)
            changed = True
        return changed

    def _new_replica(self, service, t_min: float, t: float) -> JobState:
        job = replica_job(service, self.replicas_made[service.id], t_min, t)
        self.replicas_made[service.id] += 1
        state = self.states[job.id] = self.active[job.id] = JobState(job, job.total_steps)
        state.restart_due = True  # a replica starts by loading its model: the workload's restart overhead
        return state

    def _retire(self, state: JobState) -> None:
        """A replica the plan no longer needs: it stops, its partners keep their GPU."""
        self.active.pop(state.job.id)
        for partner_id in state.placement.partners if state.placement else ():
            partner = self.active.get(partner_id)
            if partner is not None and partner.placement is not None:
                partner.placement = replace(
                    partner.placement, partners=tuple(p for p in partner.placement.partners if p != state.job.id)
                )
        state.placement = None

    def _provision(self, t: float) -> None:
        """dedicated: each service's peak replicas on free GPUs of its truly fastest type, for good;
        where that type has too few free GPUs, of the fastest type that has enough for its own
        plan (as an operator provisions where capacity is); CannotProvision where no type has."""
        for service in self.sc.services:
            speeds = {g: self.truth.throughput(service.workload, g, 1, True) * service.speed_factor
                      for g in self.sc.gpu_types}
            gpu_type, plan, free = self._dedicated_gpus(service, speeds)
            power = self.truth.gpu_power_alone(self.sc.gpu_types[gpu_type], service.workload)
            for gpu_id in free[:plan.replicas]:
                state = self._new_replica(service, plan.steps_per_s, t)
                placement = Placement(state.job.id, gpu_type, (gpu_id,), True, (), speeds[gpu_type], power)
                start_run(state, placement, t, self.sc.restart_overhead(service.workload))
                self.reserved.add(gpu_id)

    def _dedicated_gpus(self, service, speeds: dict[str, float]):
        """(type, plan, free GPUs of the type) of the fastest type whose free GPUs hold the
        service's peak plan at its speed there."""
        wanted = []
        for gpu_type in sorted(speeds, key=lambda g: (-speeds[g], g)):
            if speeds[gpu_type] <= 0:
                continue
            plan = dedicated_plan(service, speeds[gpu_type])
            free = [g.id for g in self.sc.gpus if g.gpu_type == gpu_type and g.id in self.alive
                    and g.id not in self.reserved]
            if len(free) >= plan.replicas:
                return gpu_type, plan, free
            wanted.append(f"{plan.replicas} {gpu_type} ({len(free)} free)")
        raise CannotProvision(f"dedicated: no GPU type has the free GPUs for {service.id}'s peak: it needs "
                              + ", or ".join(wanted))

    def _replicas_now(self, now: float, rates: dict[str, float], power: dict[str, float]) -> list[ReplicaNow]:
        """The placed replicas as the truth has them for the stretch from `now`."""
        out = []
        for i, state in self.active.items():
            p = state.placement
            if state.job.service is None or p is None:
                continue
            members = {q: self.states[q].job.workload for q in (i, *p.partners)}
            busy = sum(self.truth.group_rho(w, [v for q, v in members.items() if q != partner], p.gpu_type)
                       for partner, w in members.items() if partner != i)
            out.append(ReplicaNow(state.job.service, rates.get(i, 0.0), now + state.overhead_left_s, busy,
                                  power.get(i, 0.0)))
        return out
