"""What a solver can choose for a job: an option (alone on k GPUs of a type) or a pair
(sharing one GPU with a partner). A choice is None (pending), ("o", i) or ("p", i)."""
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


@dataclass(frozen=True)
class Pair:
    """Jobs `a` and `b` sharing one GPU of `gpu_type`."""

    a: int
    b: int
    gpu_type: str
    tau_a: float
    tau_b: float
    power_w: float
    cost: float
    current: bool = False

    def partner_of(self, job: int) -> int:
        return self.b if job == self.a else self.a
