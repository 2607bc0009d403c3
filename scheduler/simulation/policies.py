"""The policies compared, all in the same run on the same arrivals: a solver from
scheduler.optimizer.registry plus where its predictions come from.

- gogh: the ILP on the learned predictors (P1, refined online by P2), adaptive energy weight,
  choosing each GPU's power limit with its placement (docs/power_limits.md).
- gogh_no_power_limit: the same with every GPU at its default limit (SolverSettings.power_limits off).
- gogh_fixed_weight: the same with the base energy weight in every round.
- gogh_no_health (`simulate --health` only): gogh without the boards' health signals
  (docs/gpu_health.md): the ablation of the health rule on the same arrivals and failures.
- oracle: the ILP on the true numbers (the truth model, without noise), its power limits
  chosen on the true curves and its boards planned at their true speeds.
- gavel_max_min, gavel_ftf: Gavel's heterogeneity-aware max-min fairness and finish-time
  fairness (scheduler.optimizer.gavel*), on the true numbers like the oracle (gavel_policy.py).
- round_robin, random, greedy_fastest, greedy_efficient: the baselines on the catalog's
  numbers (what an operator without GOGH would have).
Only gogh, gogh_fixed_weight and the oracle set power limits: Gavel and the baselines never do
(no scheduler they stand for sets one).

With inference services (`simulate --services`, serving.py) every policy but two serves them the
way the control plane does (SHARED: replicas are jobs of its solver, their T_min re-derived each
round, admitted first). dedicated: the services on GPUs of their own provisioned for their peak,
never shared, and the training jobs scheduled by gogh's ILP on the rest; gogh_no_services: gogh
on the same training arrivals without any service; oracle_no_services: the oracle without any
service, the bound on what training beside the services can cost when every number is known
(docs/services.md, "The training target against the oracle"). Gavel's policies do not take services (their
rounds rotate every job by lease, a service cannot be rotated out).
"""
from dataclasses import dataclass

LEARNED, TRUTH, CATALOG = "learned", "truth", "catalog"
SHARED, DEDICATED, NO_SERVICES = "shared", "dedicated", "none"


@dataclass(frozen=True)
class Policy:
    name: str
    solver: str
    predictions: str  # LEARNED | TRUTH | CATALOG
    adaptive_weight: bool = True
    power_limits: bool = False  # SolverSettings.power_limits: the solver may set power limits
    services: str = SHARED  # SHARED | DEDICATED | NO_SERVICES: how it runs a scenario's services
    health: bool = True  # a learning policy plans with the boards' health signals (board_watch.py)


POLICIES = (
    Policy("gogh", "ilp", LEARNED, power_limits=True),
    Policy("gogh_no_power_limit", "ilp", LEARNED),
    Policy("gogh_fixed_weight", "ilp", LEARNED, adaptive_weight=False, power_limits=True),
    Policy("oracle", "ilp", TRUTH, power_limits=True),
    Policy("gavel_max_min", "gavel_max_min", TRUTH),
    Policy("gavel_ftf", "gavel_ftf", TRUTH),
    Policy("round_robin", "round_robin", CATALOG),
    Policy("random", "random", CATALOG),
    Policy("greedy_fastest", "greedy_fastest", CATALOG),
    Policy("greedy_efficient", "greedy_efficient", CATALOG),
)

#: `simulate --health` adds the ablation: gogh planning without the boards' health signals.
NO_HEALTH = Policy("gogh_no_health", "ilp", LEARNED, power_limits=True, health=False)

SERVICE_POLICIES = (
    POLICIES[0],
    Policy("dedicated", "ilp", LEARNED, power_limits=True, services=DEDICATED),
    Policy("gogh_no_services", "ilp", LEARNED, power_limits=True, services=NO_SERVICES),
    POLICIES[3],
    Policy("oracle_no_services", "ilp", TRUTH, power_limits=True, services=NO_SERVICES),
    *(p for p in POLICIES[4:] if not p.solver.startswith("gavel")),
)
