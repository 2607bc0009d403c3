"""What a solver can choose for a job: an option (alone on k GPUs of a type) or a group
(sharing one GPU with one partner, or with up to theta - 1 of them). A choice is None
(pending), ("o", i) or ("g", i); a group's choice is the same for all of its members."""
from dataclasses import dataclass

Choice = tuple[str, int] | None


@dataclass(frozen=True)
class Option:
    """Job `job` alone on `num_gpus` GPUs of `gpu_type`."""

    job: int
    gpu_type: str
    num_gpus: int
    consolidated: bool
    tau: float
    power_w: float
    cost: float
    meets_slo: bool
    current: bool = False
    power_limit_w: float | None = None  # None: the board's default limit


@dataclass(frozen=True)
class Group:
    """Jobs `members` (two, or up to theta) sharing one GPU of `gpu_type`; `taus[k]` is
    member k's throughput there (steps/s), `power_w` the GPU's."""

    members: tuple[int, ...]
    gpu_type: str
    taus: tuple[float, ...]
    power_w: float
    cost: float
    current: bool = False
    power_limit_w: float | None = None  # one limit for the shared GPU; None: the default

    def tau_of(self, job: int) -> float:
        return self.taus[self.members.index(job)]

    def partners_of(self, job: int) -> tuple[int, ...]:
        return tuple(x for x in self.members if x != job)
