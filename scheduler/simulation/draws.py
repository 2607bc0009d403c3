"""What a job draws at the default power limit, learnt from telemetry in the simulation: per
(workload, GPU type), the reference its power readings are read against and the utilization
telemetry saw (learned.SimulatedLearning folds them in).

The reference is the draw the policy planned the pair with before any telemetry (the catalog's
measured power, else the type's power curve at the catalog's utilization, else at full load: the
optimiser's rule, scheduler.optimizer.instance.draw_alone), kept from the first reading
on: a reference that telemetry moved would make the readings chase it (a draw learnt from
readings at a limit that caps the power fits any reference). The power-limit rule
(catalog.predictors.learnt_limits) then learns the reference's error g at the default and the
curve's c at limits from the readings, and the policy plans the draw at g x the reference.
"""


class LearntDraws:
    def __init__(self):
        self._reference: dict[tuple[str, str], float] = {}
        self._util: dict[tuple[str, str], tuple[float, int]] = {}  # (sum, count)

    def observe(self, workload: str, gpu_type: str, reference_w: float | None, utilization: float | None) -> None:
        """One window of a job alone on one GPU: the draw it was planned with (kept only the first
        time) and its utilization (0..1)."""
        key = (workload, gpu_type)
        if reference_w is not None and reference_w > 0:
            self._reference.setdefault(key, reference_w)
        if utilization is not None and 0 <= utilization <= 1:
            total, count = self._util.get(key, (0.0, 0))
            self._util[key] = (total + utilization, count + 1)

    def reference(self, workload: str, gpu_type: str) -> float | None:
        return self._reference.get((workload, gpu_type))

    def utilization(self, workload: str, gpu_type: str) -> float | None:
        """The mean of what telemetry saw; None before any window."""
        total, count = self._util.get((workload, gpu_type), (0.0, 0))
        return total / count if count else None
