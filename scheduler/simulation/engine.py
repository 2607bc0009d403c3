"""The virtual-time loop for one policy.

Scheduling rounds every `round_s`: jobs that arrived since the last round join, and the
policy's solver decides when something changed (an arrival, a completion, a GPU failure, or,
for a learning policy, an estimate that moved); otherwise the running allocation stands,
which is what a deterministic solver would return again. Between rounds time advances from
event to event (a job finishing, a GPU failing): jobs progress at their true rate, energy is
the power of the GPUs hosting work (idle GPUs are powered down, as the optimiser assumes),
and a job's time below T_min (waiting and restart overheads included) is counted. At the end
of a round telemetry reports, for every configuration a job trained in for at least
MIN_OBSERVED_S, its throughput with noise; a learning policy's predictions take it.
Jobs follow the job contract (work.py): they checkpoint, and a round that moves or preempts
a running job, or a GPU failure, sends it back to its last checkpoint; its next run pays the
workload's restart overhead. A failed GPU leaves the cluster; its jobs (and the jobs sharing
it) go back to pending. A job that ends leaves its partners' groups (they keep their GPU,
sharing it with one job fewer). Only alone and pair configurations are reported to a learning
policy: the predictors learn pairs (the catalog holds no group), as the telemetry records no
group either. A learning policy may explore (explore.py): each round with a job pending or
probing, its stranded jobs may get probes, which the round solves with. A scenario's profiling
campaign (modern.py) holds its GPUs from the start; when it ends they join the cluster and the
policy's predictions take the suite's measurements (`after_campaign`). Gavel's policies
(gavel_policy.py) decide every round instead, their mechanism rotating jobs between rounds.
Every stretch of time goes into the tenants' ledger (tenants.py): what each tenant held and was
entitled to, its usage (the fair-share factor the next solve gives its jobs), its energy and
any GPUs it was denied below its quota.
Power limits and boards (board_watch.py, boards.py): a placement's power limit scales its jobs'
true throughput and its GPUs' power by the truth's curves at that limit (truth.py), and each
board's true speed (spread, ageing) its jobs' throughput (a job on several boards: its slowest);
a learning policy learns each board's speed from what telemetry reports and plans with it.
Inference services (serving.py, service_rounds.py): each round a policy that serves them re-plans
each service's replicas and their T_min (a replica's rate is its workload's true rate x the
service's speed factor), moves a training partner off a replica whose new T_min their pair is no
longer predicted to meet, and solves with the replicas admitted first; `dedicated` places them
once on GPUs of their own that its solver never sees. The service watch (service_watch.py) takes what they truly
gave; the replicas stay out of the training figures (their lost work, moves, tenants) and out of
telemetry (`_run` keeps no configuration of theirs to report): as in the control plane, a replica's
steps follow its traffic and its service's own speed, so they are no measurement of its workload,
its power-limit curve or its board.
"""
import random
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field, replace

from scheduler.optimizer.entitlement import behind_entitlement
from scheduler.optimizer.finish_time import job_pace, shared_by_tenants
from scheduler.optimizer.keep_work import MeasuredRate, RunningWork, below_tmin, keep_work, leaves_at_risk
from scheduler.optimizer.problem import CurrentPlacement, JobSpec, Placement, Problem
from scheduler.optimizer.registry import get_solver
from scheduler.optimizer.service_partners import release_outgrown
from telemetry.gpu_health import braked_now
from telemetry.gpu_speed import Cell

from .board_watch import BoardWatch
from .checkpoints import DEFAULT_RESTART_OVERHEAD_S
from .explore import Explorer
from .gavel_policy import GAVEL_POLICIES, GavelScheduler, finish_time_fairness
from .policies import NO_SERVICES, Policy
from .scenario import MIN_OBSERVED_S, Scenario
from .service_rounds import ServiceRounds
from .service_watch import ServiceWatch
from .serving import SERVICES_FIRST, ServiceLoop
from .tenants import Holding, TenantLedger, type_weights
from .truth import Truth
from .work import HOUR_S, JobState, checkpoint_now, gpu_share, interrupt, progress, seconds_to_finish, start_run

LEARNING_CURVE_MAX = 20
_DONE_TOLERANCE = 1e-9


@dataclass
class PolicyRun:
    policy: str
    jobs: list[JobState]
    energy_j: float
    end_s: float
    solves: int
    solve_seconds: float
    migrations: int
    curve: dict[int, list[float]]  # observations -> absolute percentage errors
    stranded_curve: dict[int, list[float | None]]  # the same, stranded jobs on their best cell (None: no estimate)
    interruptions: dict[str, int]  # moved | preempted | failed -> runs interrupted so
    lost_gpu_s: dict[str, float]  # moved | preempted | failed -> GPU-seconds of work lost; overhead: of restarts
    busy_gpu_s: float  # GPU-seconds of GPUs hosting at least one job
    probes: int = 0  # exploration probes placed (explore.py)
    probed_jobs: int = 0
    tenants: TenantLedger | None = None  # what each tenant received, used, spent and was denied (tenants.py)
    boards: BoardWatch | None = None  # power-limit time, learnt board speeds and their errors (board_watch.py)
    services: ServiceWatch | None = None  # what the services truly gave (service_watch.py); None: none served
    # (virtual time, |planned - true| / true) of each placed job's speed fraction at a limit that
    # slows it, truly or as planned, every round (a learning policy's; metrics.limit_metrics)
    limit_speed_errors: list[tuple[float, float]] = field(default_factory=list)


class Simulation(ServiceRounds):
    def __init__(self, scenario: Scenario, truth: Truth, policy: Policy, predictions, *, seed: int = 0,
                 explorer: Explorer | None = None, after_campaign=None):
        """`after_campaign`: called with the predictions when the scenario's campaign ends, returns
        the predictions to plan with from then on (the catalog with the suite's measurements)."""
        self.sc, self.truth, self.policy, self.predictions = scenario, truth, policy, predictions
        self.explorer = explorer
        self.learns = hasattr(predictions, "observe")  # SimulatedLearning takes telemetry; the others are fixed
        self.rng = random.Random(f"telemetry:{seed}:{policy.name}")
        self.power_rng = random.Random(f"power:{seed}:{policy.name}")  # its own: the rates' draws stay as they were
        self.states = {j.id: JobState(j, j.total_steps) for j in scenario.jobs}
        self.node = {g.id: g.node for g in scenario.gpus}
        self.per_server = max(Counter(self.node.values()).values(), default=1)
        self.alive = {g.id for g in scenario.gpus}
        self.campaign = scenario.campaign
        self.after_campaign = after_campaign
        if self.campaign is not None:
            self.alive -= set(self.campaign.gpu_ids)
            self.campaign_w = sum(self.sc.gpu_types[g.gpu_type].power_curve(truth.busy_utilization)
                                  for g in scenario.gpus if g.id in self.campaign.gpu_ids)
        self.active: dict[str, JobState] = {}
        self.energy_j = 0.0
        self.load_history: list[float] = []
        self.solves, self.solve_seconds, self.migrations = 0, 0.0, 0
        self.interruptions: Counter = Counter()
        self.lost_gpu_s: Counter = Counter()
        self.busy_gpu_s = 0.0
        self.overheads_seen: dict[str, float] = {}  # workload -> a restart's overhead, once one was paid in full
        self.curve: dict[int, list[float]] = defaultdict(list)
        self.stranded_curve: dict[int, list[float | None]] = defaultdict(list)
        self.limit_speed_errors: list[tuple[float, float]] = []
        self.settings = replace(scenario.settings, solver=policy.solver, adaptive_weight=policy.adaptive_weight,
                                power_limits=scenario.settings.power_limits and policy.power_limits)
        self.boards = scenario.boards
        self.watch = BoardWatch(self.boards, learns=self.learns, truth_speeds=policy.predictions == "truth",
                                health=policy.health)
        self.now = 0.0
        self.gavel = (GavelScheduler(policy.solver, truth, scenario.gpus, scenario.tenants)
                      if policy.solver in GAVEL_POLICIES else None)
        self.ledger = TenantLedger(scenario.tenants, scenario.quotas, type_weights(scenario.gpu_types),
                                   scenario.half_life_s)
        self.runs_on: dict[str, frozenset[str]] = {}
        self.below: set[str] = set()  # jobs measured below their T_min that may move now (_newly_below)
        if scenario.services and policy.solver in GAVEL_POLICIES:
            raise ValueError(f"{policy.name} cannot serve inference services (docs/simulation.md)")
        self.serving = (ServiceLoop(scenario.services, scenario.traces, round_s=scenario.round_s, seed=seed,
                                    policy=policy.name)
                        if scenario.services and policy.services != NO_SERVICES else None)
        self.service_of = {s.id: s for s in scenario.services}
        self.reserved: set[str] = set()  # GPUs of dedicated replicas, out of the solver's sight
        self.replicas_made: Counter = Counter()

    # ---- the loop ------------------------------------------------------------------------------
    def run(self) -> PolicyRun:
        arrivals = deque(sorted(self.sc.jobs, key=lambda j: j.arrival_s))
        failures = deque(sorted(self.sc.failures, key=lambda f: f.time_s))
        end, round_s = self.sc.end_s, self.sc.round_s
        t, changed = 0.0, False
        while t < end:
            self.now = t
            if self.campaign is not None and t >= self.campaign.duration_s:
                self._end_campaign()
                changed = True
            while arrivals and arrivals[0].arrival_s <= t:
                job = arrivals.popleft()
                self.active[job.id] = self.states[job.id]
                self.active[job.id].below_s += t - job.arrival_s  # waited for this round
                changed = True
            if self.serving is not None:
                changed |= self._serve(t)
            if not self.active and self.campaign is not None:  # only the suite runs
                self._advance(t, min(t + round_s, end), failures)
                t += round_s
                continue
            if not self.active:
                if not arrivals:
                    break
                t = max(
                    t + round_s, (arrivals[0].arrival_s // round_s + (arrivals[0].arrival_s % round_s > 0)) * round_s
                )
                continue
            health = self.watch.read_health(self.alive, t)
            leaving, below = self._leaves_at_risk(t), self._newly_below(t)  # both: _newly_below keeps its set
            changed |= health or leaving or below
            if self.gavel is not None:
                self._gavel_round(t)
            elif changed or (self.explorer is not None and self._may_probe()):
                self._solve(t, changed)
            if self.learns:
                self._score_predictions()
                self._score_limits()
            changed = self._advance(t, min(t + round_s, end), failures)
            t += round_s
        if self.gavel is not None:
            self.solves, self.solve_seconds = self.gavel.solves, self.gavel.solve_seconds
        training = [s for s in self.states.values() if s.job.service is None]
        return PolicyRun(self.policy.name, training, self.energy_j, min(t, end), self.solves,
                         self.solve_seconds, self.migrations, dict(self.curve), dict(self.stranded_curve),
                         dict(self.interruptions),
                         dict(self.lost_gpu_s), self.busy_gpu_s,
                         self.explorer.started if self.explorer else 0,
                         len(self.explorer.probed_jobs) if self.explorer else 0, self.ledger, self.watch,
                         self.serving.watch if self.serving else None, limit_speed_errors=self.limit_speed_errors)

    def _may_probe(self) -> bool:
        """A round with nothing changed can start or end a probe only with a job pending or probing."""
        return bool(self.explorer.running) or any(s.placement is None for s in self.active.values())

    def _end_campaign(self) -> None:
        """The suite is done: its GPUs join the cluster, its measurements the predictions."""
        self.alive |= set(self.campaign.gpu_ids)
        self.campaign = None
        if self.after_campaign is not None:
            self.predictions = self.after_campaign(self.predictions)

    def _gavel_round(self, t: float) -> None:
        """Gavel decides every round: its mechanism rotates jobs towards its allocation. Its jobs
        hold round-long leases and save when one is not renewed (Gavel's lease API), so a job it
        moves or pauses loses no steps; it still pays its restart overhead."""
        decided = self.gavel.round(list(self.active.values()), self.alive, t)
        for job_id, state in self.active.items():
            new = decided.get(job_id)
            if state.placement is not None and (new is None or new.gpu_ids != state.placement.gpu_ids):
                checkpoint_now(state)
            self._place(state, new, t)

    def _solve(self, t: float, changed: bool = True) -> None:
        """Decide the round: solve when something changed or (exploring) a probe starts or ends.
        Each job carries its tenant's fair-share factor and its pace; the problem, the scenario's quotas."""
        fair, paces = self.ledger.factors(), self._paces(t)
        solved = [s for s in self.active.values() if not (s.placement and s.placement.gpu_ids[0] in self.reserved)]
        gpus = tuple(replace(g, speed=self.watch.planned_speed(g.id, t), slow=self.watch.planned_slow(g.id),
                             at_risk=self.watch.planned_at_risk(g.id))
                     for g in self.sc.gpus if g.id in self.alive and g.id not in self.reserved)
        jobs = keep_work(tuple((self._spec(s, fair.get(s.job.tenant, 1.0), paces.get(s.job.id, 0.0)),
                                self._running_work(s, t)) for s in solved),
                         self.settings, frozenset(g.id for g in gpus if g.at_risk))
        if self.predictions is not None and shared_by_tenants(len(self.sc.tenants)):
            jobs = behind_entitlement(jobs, len(gpus), self.sc.tenants, self.predictions, self.sc.gpu_types)
        problem = release_outgrown(Problem(jobs=jobs, gpus=gpus,
                                           gpu_types=self.sc.gpu_types, predictions=self.predictions,
                                           settings=self.settings, load_history=tuple(self.load_history),
                                           quotas=self.sc.quotas))
        if self.explorer is not None:
            problem, probes_changed = self.explorer.plan(problem, self.predictions, t)
            if not (changed or probes_changed):
                return
        started = time.perf_counter()
        allocation = get_solver(self.policy.solver).solve(problem)
        if self.explorer is not None:
            self.explorer.placed(allocation.placements)
        self.solve_seconds += time.perf_counter() - started
        self.solves += 1
        self.load_history.append(allocation.load)
        for state in solved:
            self._place(state, allocation.placements.get(state.job.id), t)

    def _paces(self, t: float) -> dict[str, float]:
        """Each active training job's pace (finish_time.py) from the predictions, with 1/n of the
        live GPUs, n the jobs in the system now, as the control plane computes it (none with one
        tenant, nor for a policy planning without predictions)."""
        if self.predictions is None or not shared_by_tenants(len(self.sc.tenants)):
            return {}
        capacity = Counter(g.gpu_type for g in self.sc.gpus if g.id in self.alive)
        n = len(self.active)
        return {s.job.id: job_pace(self.predictions, capacity, n, workload=s.job.workload, max_gpus=s.job.max_gpus,
                                   min_throughput=s.job.min_throughput, elapsed_s=t - s.job.arrival_s,
                                   remaining_steps=s.remaining, total_steps=s.job.total_steps)
                for s in self.active.values() if s.job.service is None}

    def _leaves_at_risk(self, t: float) -> bool:
        """Whether a job on a board at risk reached the point where it leaves it (keep_work): the
        round then solves, as the control plane's rounds do every time."""
        at_risk = {g for g in self.watch.health if g in self.alive and self.watch.planned_at_risk(g)}
        return bool(at_risk) and any(s.placement and at_risk.intersection(s.placement.gpu_ids)
                                     and leaves_at_risk(self._running_work(s, t)) for s in self.active.values())

    def _newly_below(self, t: float) -> bool:
        """Whether a job measured below its T_min newly may move (keep_work.below_tmin, the round's own
        predicate: measured below and at the point where its move is worth the work it throws
        away): the round then solves, as the control plane's rounds do every time. Solving when it
        is first measured below, it solved while the job could not move yet and not when it could."""
        below = {i for i, s in self.active.items() if s.placement and s.job.service is None
                 and below_tmin(self._spec(s), self._running_work(s, t)) is not None}
        newly, self.below = below - self.below, below
        return bool(newly)

    def _spec(self, state: JobState, fair_share: float = 1.0, pace: float = 0.0) -> JobSpec:
        """The job as a round states it to the solver (before keep_work)."""
        p = state.placement
        return JobSpec(state.job.id, state.job.workload, state.job.tenant, state.job.min_throughput,
                       state.job.max_gpus, priority=int(SERVICES_FIRST and state.job.service is not None),
                       service=state.job.service is not None, alone=self._slo_at_risk(state.job.service),
                       current=CurrentPlacement(p.gpu_ids, p.partners, p.power_limit_w) if p else None,
                       fair_share=fair_share, pace=pace)

    def _slo_at_risk(self, service_id: str | None) -> bool:
        """Whether the service's plan says its SLO is at risk (its replicas run alone, as the
        control plane's problem_source reads Service.slo_note)."""
        state = self.serving.state.get(service_id) if service_id is not None and self.serving else None
        return bool(state and state.plan and state.plan.reason)

    def _running_work(self, state: JobState, t: float) -> RunningWork | None:
        """What a placed job would lose, as a control plane knows it: its rate observed once it
        trained for a telemetry report (before: the round's prediction), the power the round
        predicted, the workload's restart overhead once one was measured (before: the default)."""
        p = state.placement
        if p is None:
            return None
        rate = self._rate(state) if state.trained_s >= MIN_OBSERVED_S else p.predicted_throughput
        if state.job.service is not None:  # a replica has no steps to redo: a move costs its warm-up
            return RunningWork(
                steps_since_checkpoint=0.0, remaining_steps=None, steps_per_s=rate or None, power_w=p.predicted_power_w,
                num_gpus=1, restart_overhead_s=self.sc.restart_overhead(state.job.workload),
                placed_s_ago=t - state.placed_at, preemptions_last_hour=state.preemptions_since(t - HOUR_S),
                running=True,
            )
        return RunningWork(
            steps_since_checkpoint=state.step - state.checkpoint_step, remaining_steps=state.remaining,
            steps_per_s=rate or None, power_w=p.predicted_power_w, num_gpus=len(p.gpu_ids),
            restart_overhead_s=self.overheads_seen.get(state.job.workload, DEFAULT_RESTART_OVERHEAD_S),
            placed_s_ago=t - state.placed_at, preemptions_last_hour=state.preemptions_since(t - HOUR_S), running=True,
            moves=state.moves, measured=MeasuredRate.of(state.measured), checkpointed=state.checkpoint_step > 0,
        )

    def _place(self, state: JobState, new: Placement | None, t: float) -> None:
        """Apply a round's decision to one job: it stays, moves, is preempted, or starts."""
        old = state.placement
        if not self.settings.power_limits and new is not None and new.power_limit_w is not None:
            new = replace(new, power_limit_w=None)  # a policy without limits never sets one
        if old is not None and new is not None and new.gpu_ids == old.gpu_ids:
            state.placement = new  # stays; its partners may have changed
            if (new.power_limit_w, new.partners) != (old.power_limit_w, old.partners):
                state.measured.clear()  # measured at another limit, or beside other partners
            return
        if old is not None:
            self._interrupt(state, "moved" if new is not None else "preempted", t)
        if new is None:
            return
        if state.last_gpus and new.gpu_ids != state.last_gpus and state.job.service is None:
            self.migrations += 1
        start_run(state, new, t, self.sc.restart_overhead(state.job.workload))

    def _interrupt(self, state: JobState, cause: str, t: float) -> None:
        if state.job.service is not None:  # a replica loses no training work
            interrupt(state)
            self.serving.watch.moves += cause == "moved"
            return
        self.lost_gpu_s[cause] += interrupt(state)
        self.interruptions[cause] += 1
        if cause == "moved":
            state.moves += 1
        elif cause == "preempted":
            state.preempted_at.append(t)

    # ---- truth ---------------------------------------------------------------------------------
    def _config(self, state: JobState) -> tuple[tuple[str, int, bool], tuple[str, ...]]:
        """(GPU type, GPUs, consolidated) and the workloads of the jobs sharing its GPU, sorted."""
        p = state.placement
        consolidated = len({self.node[g] for g in p.gpu_ids}) == 1
        partners = tuple(sorted(self.states[partner].job.workload for partner in p.partners))
        return (p.gpu_type, len(p.gpu_ids), consolidated), partners

    def _rate(self, state: JobState) -> float:
        (gpu_type, k, consolidated), partners = self._config(state)
        p = state.placement
        rate = self._true_rate(state.job.workload, gpu_type, k, consolidated, partners, p.gpu_ids, p.power_limit_w)
        service = self.service_of.get(state.job.service)
        return rate * service.speed_factor if service else rate

    def _power_by_job(self) -> dict[str, float]:
        """Job id -> the power of its GPUs, a shared GPU's split evenly between the jobs on it."""
        out, seen = {}, set()
        for state in self.active.values():
            p = state.placement
            if p is None or p.gpu_ids[0] in seen:
                continue
            seen.update(p.gpu_ids)
            spec = self.sc.gpu_types[p.gpu_type]
            _, partners = self._config(state)
            if self._rate(state) <= 0:  # does not fit: the job cannot run, the GPU idles
                watts = spec.idle_w * len(p.gpu_ids)
            elif not partners:
                watts = self.truth.gpu_power_alone(spec, state.job.workload)
                watts *= self.truth.at_power_limit(spec, state.job.workload, p.power_limit_w)[1]
                watts = min(watts, p.power_limit_w or watts) * len(p.gpu_ids)  # a board never draws above its limit
            else:
                members = (state.job.workload, *partners)
                watts = self.truth.gpu_power_shared(spec, members)
                watts *= self.truth.group_at_power_limit(spec, members, p.power_limit_w)
                watts = min(watts, p.power_limit_w or watts)
            members = (state.job.id, *p.partners)
            for member in members:
                out[member] = watts / len(members)
        return out

    def _account(self, dt: float, power: dict[str, float]) -> None:
        """The tenants' ledger and each job's jobs-in-system integral for `dt` seconds as now."""
        training = {i: s for i, s in self.active.items() if s.job.service is None}
        holdings = [
            Holding(s.job.tenant, s.job.max_gpus, s.placement.gpu_type if s.placement else None,
                    gpu_share(s.placement) if s.placement else 0.0, self._runs_on(s), power.get(i, 0.0))
            for i, s in training.items()
        ]
        self.ledger.record(dt, holdings, len(self.alive))
        for state in training.values():
            state.system_jobs_s += len(training) * dt
            state.active_s += dt

    def _runs_on(self, state: JobState) -> frozenset[str]:
        """The GPU types the job truly runs on, alone within its D_j GPUs."""
        if state.job.id not in self.runs_on:
            self.runs_on[state.job.id] = frozenset(
                g for g, k, consolidated in self._cells(state) if self.truth.throughput(state.job.workload, g, k,
                                                                                       consolidated) > 0)
        return self.runs_on[state.job.id]

    # ---- time ----------------------------------------------------------------------------------
    def _advance(self, t0: float, t1: float, failures: deque) -> bool:
        """Run [t0, t1); True when the next round must decide again."""
        now, changed = t0, False
        while now < t1:
            stop = min(t1, failures[0].time_s) if failures else t1
            self.now = now
            rates = {i: self._rate(s) for i, s in self.active.items() if s.placement}
            finishing = None
            for i, rate in rates.items():
                if rate > 0 and now + seconds_to_finish(self.active[i], rate) < stop:
                    stop, finishing = now + seconds_to_finish(self.active[i], rate), i
            dt = max(0.0, stop - now)
            power = self._power_by_job()
            self.energy_j += sum(power.values()) * dt
            self._account(dt, power)
            if self.campaign is not None:
                suite_s = max(0.0, min(stop, self.campaign.duration_s) - now)
                self.energy_j += self.campaign_w * suite_s
                self.busy_gpu_s += len(self.campaign.gpu_ids) * suite_s
            self.busy_gpu_s += len({g for s in self.active.values() if s.placement for g in s.placement.gpu_ids}) * dt
            self._limit_time(dt)
            if self.serving is not None:
                self.serving.watch.segment(now, stop, self._replicas_now(now, rates, power))
            for i, state in self.active.items():
                self._run(state, rates.get(i), dt)
            now = stop
            if finishing is not None:
                self.active[finishing].remaining = 0.0
            for i in [i for i, s in self.active.items() if s.remaining <= _DONE_TOLERANCE * s.job.total_steps]:
                self._finish(i, now)
                changed = True
            while failures and failures[0].time_s <= now:
                self._fail(failures.popleft().gpu_id, now)
                changed = True
        return self._telemetry() or changed

    def _limit_time(self, dt: float) -> None:
        """Busy GPU-seconds, and those at a limit below the default (each GPU once)."""
        seen = set()
        for state in self.active.values():
            p = state.placement
            if p is None or p.gpu_ids[0] in seen:
                continue
            seen.update(p.gpu_ids)
            limited = p.power_limit_w is not None and p.power_limit_w < self.sc.gpu_types[p.gpu_type].tdp_w
            self.watch.held(len(p.gpu_ids), limited, dt)

    def _run(self, state: JobState, rate: float | None, dt: float) -> None:
        """`dt` seconds of one job at `rate` (None: pending): progress, time below T_min
        (restart overheads included), lost overhead, the round's configurations for telemetry."""
        paid = progress(state, rate, dt) if rate is not None else 0.0
        if state.job.service is not None:
            return
        state.below_s += dt if (rate or 0.0) < state.job.min_throughput else paid
        if rate is None:
            return
        self.lost_gpu_s["overhead"] += paid * gpu_share(state.placement)
        if paid and not state.overhead_left_s:
            self.overheads_seen[state.job.workload] = self.sc.restart_overhead(state.job.workload)
        if dt > paid:
            p = state.placement
            state.held[(*self._config(state), p.gpu_ids, p.power_limit_w)] += dt - paid

    def _finish(self, job_id: str, now: float) -> None:
        state = self.active.pop(job_id)
        state.done_at, state.remaining = now, 0.0
        state.ftf_rho = finish_time_fairness(state, self.truth, self.sc.gpus)
        if self.gavel is not None:
            self.gavel.forget(job_id)
        self._observe(state)
        for partner_id in state.placement.partners if state.placement else ():
            partner = self.active.get(partner_id)
            if partner is not None and partner.placement is not None:
                partner.placement = replace(
                    partner.placement, partners=tuple(p for p in partner.placement.partners if p != job_id)
                )
                partner.measured.clear()  # measured beside the job that ended
        state.placement = None

    def _fail(self, gpu_id: str, t: float) -> None:
        self.alive.discard(gpu_id)
        before = self.lost_gpu_s["failed"]
        for state in self.active.values():
            if state.placement and gpu_id in state.placement.gpu_ids:
                self._interrupt(state, "failed", t)
        self.watch.failed(gpu_id, t, self.lost_gpu_s["failed"] - before)

    def _telemetry(self) -> bool:
        moved = False
        for state in self.active.values():
            moved |= self._observe(state)
        return moved

    def _observe(self, state: JobState) -> bool:
        """Report the round's configurations of a job to a learning policy; reset the round."""
        moved = False
        if self.learns:
            for ((gpu_type, k, consolidated), partners, gpus, limit), seconds in state.held.items():
                if seconds >= MIN_OBSERVED_S and len(partners) <= 1:  # a group is no catalog cell
                    rate = self._true_rate(state.job.workload, gpu_type, k, consolidated, partners, gpus, limit)
                    measured = self.truth.observe(rate, self.rng)
                    p = state.placement
                    here = p is not None and (gpus, limit) == (p.gpu_ids, p.power_limit_w)
                    if here and partners == self._config(state)[1]:
                        state.measured.append(measured)
                    board = self.watch.planned_slowest(gpus) if self.boards.varies else 1.0
                    if not any(braked_now(self.watch.health.get(g, {})) for g in gpus):
                        moved |= self._read_limit(state.job.workload, (gpu_type, k, consolidated), partners, limit,
                                                  measured / board)
                    # P2 learns the type's rate at its default limit: what telemetry saw, over the
                    # limit's speed as learnt with this very observation (over the speed planned
                    # before it, P2 and the curve would both take its error) and (boards differing)
                    # the boards' learnt speed.
                    seen = measured / (self._planned_limit_speed(state.job.workload, gpu_type, limit) * board)
                    if self.explorer is not None:
                        self.explorer.observed(state.job.workload, gpu_type, k, consolidated, partners, seen)
                    partner = partners[0] if partners else None
                    moved |= self.predictions.observe(state.job.workload, gpu_type, k, consolidated, seen, partner)
                    self.watch.observe(gpus, Cell(state.job.workload, gpu_type, k, consolidated, partner, limit),
                                       measured, self.now)
        state.held.clear()
        return moved

    def _true_rate(self, workload, gpu_type, k, consolidated, partners, gpus=(), limit_w=None) -> float:
        """The true rate in a configuration, on `gpus` (their boards' speeds) at `limit_w`."""
        if not partners:
            rate = self.truth.throughput(workload, gpu_type, k, consolidated)
        else:
            rate = self.truth.shared_throughput(workload, partners, gpu_type)
        if limit_w is not None:
            rate *= self.truth.at_power_limit(self.sc.gpu_types[gpu_type], workload, limit_w)[0]
        return rate * self.boards.slowest(gpus, self.now) if gpus else rate

    def _read_limit(self, workload, config, partners, limit_w, measured) -> bool:
        """A job alone on one GPU is a reading of its workload's limit curve on the type (at
        `limit_w`, the default when None): its rate over the policy's reference rate there
        (learnt_limits; one GPU: the reference's error is one factor per workload and type), and
        its GPU's power and utilization (with telemetry's noise on the power)."""
        if partners or config[1] != 1 or not hasattr(self.predictions, "observe_limit"):
            return False
        reference = self.predictions.reference(workload, *config)
        if not reference:
            return False
        spec = self.sc.gpu_types[config[0]]
        power = self.truth.gpu_power_alone(spec, workload) * self.truth.at_power_limit(spec, workload, limit_w)[1]
        planned_w = self.predictions.prior_draw(workload, config[0], spec.power_curve)
        return self.predictions.observe_limit(
            workload, config[0], limit_w, measured / reference, self.truth.observe(power, self.power_rng), planned_w,
            self.truth.utilization(workload, config[0]))

    def _planned_limit_speed(self, workload, gpu_type, limit_w) -> float:
        """The policy's own prediction of the speed fraction at `limit_w` (1 at the default)."""
        ask = getattr(self.predictions, "at_power_limit", None)
        answer = ask(workload, gpu_type, limit_w) if ask and limit_w is not None else None
        return answer[0] if answer else 1.0

    def _score_predictions(self) -> None:
        """Learning curve: error of the estimate of each placed job's throughput where it runs,
        by how many observations its workload's estimate has had; and every stranded job (never
        placed, no configuration predicted to reach its T_min), scored on its truly fastest
        configuration (the one that would serve it best)."""
        for state in self.active.values():
            if state.job.service is not None:
                continue
            n = self.predictions.observations(state.job.workload)
            if n > LEARNING_CURVE_MAX:
                continue
            if state.placement is None:
                if not state.last_gpus and self._predicted_impossible(state):
                    self.stranded_curve[n].append(self._best_cell_error(state))
                continue
            (gpu_type, k, consolidated), partners = self._config(state)
            p = state.placement
            true = self._true_rate(state.job.workload, gpu_type, k, consolidated, partners, p.gpu_ids, p.power_limit_w)
            estimate = self.predictions.throughput(state.job.workload, gpu_type, k, consolidated, partners)
            if estimate:
                estimate *= self._planned_limit_speed(state.job.workload, gpu_type, p.power_limit_w)
            self.watch.score(p.gpu_ids, self.now, estimate, true)
            if estimate and self.boards.varies:
                estimate *= self.watch.planned_slowest(p.gpu_ids)
            if true > 0 and estimate:
                self.curve[n].append(abs(estimate - true) / true)

    def _score_limits(self) -> None:
        """The error of the speed fraction each placed job was planned at under its limit, where
        the limit slows it (truly or as planned)."""
        for state in self.active.values():
            p = state.placement
            if state.job.service is not None or p is None or p.power_limit_w is None:
                continue
            true = self.truth.at_power_limit(self.sc.gpu_types[p.gpu_type], state.job.workload, p.power_limit_w)[0]
            planned = self._planned_limit_speed(state.job.workload, p.gpu_type, p.power_limit_w)
            if min(true, planned) < 1.0:
                self.limit_speed_errors.append((self.now, abs(planned - true) / true))

    def _cells(self, state: JobState):
        """The alone configurations a job may take: every type, 1..D_j GPUs (powers of two), in one
        server where they fit."""
        for gpu_type in self.sc.gpu_types:
            for k in (1, 2, 4, 8):
                if k <= state.job.max_gpus:
                    yield gpu_type, k, k <= self.per_server

    def _predicted_impossible(self, state: JobState) -> bool:
        w, t_min = state.job.workload, state.job.min_throughput
        return not any((self.predictions.tau(w, *cell) or 0.0) >= t_min for cell in self._cells(state))

    def _best_cell_error(self, state: JobState) -> float | None:
        w = state.job.workload
        cell = max(self._cells(state), key=lambda c: self.truth.throughput(w, *c))
        true, estimate = self.truth.throughput(w, *cell), self.predictions.tau(w, *cell)
        return abs(estimate - true) / true if true > 0 and estimate else None
