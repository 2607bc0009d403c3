"""`gogh`'s exploration in the simulation: the optimiser's rule (scheduler.optimizer.exploration)
driven by the simulated clock, as the control plane drives it by the wall clock.

Each round: the beliefs of every pending job from the policy's predictions, `choose_probes` with
the simulation's time, the probe history of each job and the GPUs already probing, then
`with_probes` turns the running and the new probes into probe JobSpecs (alone, on one type, at
the lowest admission level). A probe the round could not place did not happen: its history is
restored. A placed probe is a run like any other (it trains, checkpoints, telemetry observes it
once it trained for a report); when its `until` has passed the job goes back to normal
planning on its estimate, now corrected by what telemetry saw. A probe whose configuration is
then predicted below the job's T_min is a measurement that said "not here": where another
configuration is predicted to serve the job, that round plans it as if it were pending (no
current placement, so no keep-work rule holds it there) and it moves, as the control plane does
(scheduler/exploration_round.py). Where none is, it runs on below T_min like any running job
(the control plane preempts it instead: measured with that rule, 2 of 300 jobs of the held-out
scenario never finished, docs/simulation.md).

A workload *disagrees* with the catalog once a round's observation of it, alone, differs from
the catalog's measured value of that configuration by more than DISAGREEMENT (either way):
its stranded jobs' beliefs are then widened (`choose_probes(disagreed=...)`).
"""
import math
from dataclasses import dataclass, field, replace

from scheduler.optimizer.exploration import (
    ExplorationSettings,
    Probe,
    ProbeHistory,
    beliefs,
    choose_probes,
    stranded,
    with_probes,
)
from scheduler.optimizer.problem import Placement, Problem

#: Ratio between a round's observed throughput and the catalog's measurement beyond which the
#: workload's telemetry contradicts the catalog: well outside the rounds' noise (5 %) and the
#: default per-workload deviation (exp(N(0, 0.15)): 1.5 is 2.7 standard deviations).
DISAGREEMENT = 1.5


@dataclass
class Explorer:
    settings: ExplorationSettings
    catalog: object  # the catalog's measured means (CatalogPredictions): what telemetry may contradict
    history: dict[str, ProbeHistory] = field(default_factory=dict)
    running: dict[str, Probe] = field(default_factory=dict)
    disagreed: set[str] = field(default_factory=set)
    started: int = 0  # probes placed
    probed_jobs: set[str] = field(default_factory=set)
    _new: dict[str, ProbeHistory] = field(default_factory=dict)  # this round's probes: job -> history before

    def plan(self, problem: Problem, predictions, now: float) -> tuple[Problem, bool]:
        """The round's problem with its probes; True when a probe starts or ends (the round solves)."""
        active = {j.id for j in problem.jobs}
        ended = [job_id for job_id, p in self.running.items() if p.until <= now or job_id not in active]
        for job_id in ended:
            del self.running[job_id]
        self._new = {}
        if self.settings.enabled:
            probing = sum(p.num_gpus for p in self.running.values())
            chosen = choose_probes(problem, beliefs(problem, predictions), self.history, now, self.settings,
                                   disagreed=self.disagreed, probing_gpus=probing)
            for probe in chosen:
                before = self.history.get(probe.job_id, ProbeHistory())
                self._new[probe.job_id] = before
                self.history[probe.job_id] = ProbeHistory(before.probes + 1, now)
                self.running[probe.job_id] = probe
        probes = list(self.running.values())
        problem = _replanned(problem, predictions, {job_id for job_id in ended if job_id in active})
        return (with_probes(problem, probes) if probes else problem), bool(self._new or ended)

    def placed(self, placements: dict[str, Placement]) -> None:
        """After the round's solve: a probe it left out did not run."""
        for job_id in list(self.running):
            if job_id in placements:
                if job_id in self._new:
                    self.started += 1
                    self.probed_jobs.add(job_id)
                continue
            del self.running[job_id]
            if job_id in self._new:
                self.history[job_id] = self._new[job_id]
        self._new = {}

    def observed(self, workload: str, gpu_type: str, num_gpus: int, consolidated: bool, partners, seen: float) -> None:
        if partners or seen <= 0:
            return
        measured = self.catalog.tau(workload, gpu_type, num_gpus, consolidated)
        if measured and abs(math.log(seen / measured)) > math.log(DISAGREEMENT):
            self.disagreed.add(workload)


def _replanned(problem: Problem, predictions, ended: set[str]) -> Problem:
    """The jobs whose probe just ended on a configuration now predicted below their T_min, while
    another configuration is predicted to serve them, planned as if pending (see the module's
    docstring)."""
    gpus = {g.id: g for g in problem.gpus}

    def below(spec) -> bool:
        placed = [gpus[i] for i in spec.current.gpu_ids if i in gpus] if spec.current else []
        if not placed:
            return False
        tau = predictions.tau(spec.workload, placed[0].gpu_type, len(placed), len({g.node for g in placed}) == 1)
        return tau is not None and tau < spec.min_throughput

    judged = {spec.id for spec in problem.jobs if spec.id in ended and below(spec)}
    if not judged:
        return problem
    as_pending = replace(problem, jobs=tuple(replace(spec, current=None) for spec in problem.jobs if spec.id in judged))
    served = judged - set(stranded(as_pending, beliefs(as_pending, predictions)))
    return replace(problem, jobs=tuple(
        replace(spec, current=None) if spec.id in served else spec for spec in problem.jobs
    ))
