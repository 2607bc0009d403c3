"""The suite's cases, in the order they run.

- Alone on one GPU: every reference family at two or three batch sizes spread over the
  catalog's range (A3C and CycleGAN have one configuration each in the catalog), plus the two
  current shapes (GPT-2 small with mixed precision, ViT-B/16). Names are the catalog's
  workload names, so a measurement lands on the workload the predictors already know.
- Co-located pairs (two processes sharing one GPU): one pair per kind of interference, so the
  co-location model has an anchor for each on the new type: compute-bound with compute-bound
  (ResNet-50 + ResNet-18), compute- with memory-bound (ResNet-50 + LM), memory- with memory-bound
  (Recommendation + LM), a busy model with a launch-bound one (Transformer + A3C), and the two
  current shapes together (GPT-2 + ViT). Every pair of the catalog would be 45 x the suite's time.
- Data parallel on 2, 4 and 8 GPUs of one node: the four families the catalog measures on
  several GPUs (ResNet-18/50, Transformer, LM), at a middle batch size, plus GPT-2, whose
  124 M parameters make its all-reduce the heaviest of the suite.
"""
from dataclasses import dataclass

from ..gavel import parse_workload

DATA_PARALLEL_GPUS = (2, 4, 8)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    workload: str
    family: str
    batch_size: int | None
    num_gpus: int = 1
    partner: str | None = None

    @property
    def partner_family(self) -> str | None:
        return None if self.partner is None else parse_workload(self.partner).family

    @property
    def partner_batch_size(self) -> int | None:
        return None if self.partner is None else parse_workload(self.partner).batch_size


def _alone(workload: str) -> Case:
    parsed = parse_workload(workload)
    return Case(workload, workload, parsed.family, parsed.batch_size)


def _pair(workload: str, partner: str) -> Case:
    return Case(f"{workload} + {partner}", workload, parse_workload(workload).family,
                parse_workload(workload).batch_size, partner=partner)


def _parallel(workload: str, gpus: int) -> Case:
    parsed = parse_workload(workload)
    return Case(f"{workload} x{gpus}", workload, parsed.family, parsed.batch_size, num_gpus=gpus)


SINGLE_GPU_WORKLOADS = (
    "ResNet-18 (batch size 32)", "ResNet-18 (batch size 128)", "ResNet-18 (batch size 256)",
    "ResNet-50 (batch size 16)", "ResNet-50 (batch size 64)", "ResNet-50 (batch size 128)",
    "Transformer (batch size 32)", "Transformer (batch size 128)", "Transformer (batch size 256)",
    "LM (batch size 5)", "LM (batch size 20)", "LM (batch size 80)",
    "Recommendation (batch size 512)", "Recommendation (batch size 2048)", "Recommendation (batch size 8192)",
    "A3C",
    "CycleGAN",
    "GPT-2 (batch size 8)", "GPT-2 (batch size 16)",
    "ViT (batch size 32)", "ViT (batch size 64)",
)
PAIRS = (
    ("ResNet-50 (batch size 64)", "ResNet-18 (batch size 128)"),
    ("ResNet-50 (batch size 64)", "LM (batch size 20)"),
    ("Recommendation (batch size 2048)", "LM (batch size 20)"),
    ("Transformer (batch size 128)", "A3C"),
    ("GPT-2 (batch size 8)", "ViT (batch size 32)"),
)
DATA_PARALLEL_WORKLOADS = (
    "ResNet-18 (batch size 128)", "ResNet-50 (batch size 64)", "Transformer (batch size 128)",
    "LM (batch size 20)", "GPT-2 (batch size 8)",
)

SINGLE_GPU_CASES = tuple(_alone(w) for w in SINGLE_GPU_WORKLOADS)
PAIR_CASES = tuple(_pair(w, p) for w, p in PAIRS)
DATA_PARALLEL_CASES = tuple(_parallel(w, k) for k in DATA_PARALLEL_GPUS for w in DATA_PARALLEL_WORKLOADS)
CASES = SINGLE_GPU_CASES + PAIR_CASES + DATA_PARALLEL_CASES
BY_NAME = {case.name: case for case in CASES}

#: The workloads the suite adds to the catalog (families the reference data does not have):
#: (name, family, batch size, description), for whoever creates catalog rows for them.
_GPT2 = "Language modelling: GPT-2 small decoder, 1024 tokens, bf16 mixed precision"
_VIT = "Image classification: ViT-B/16 at 224x224, bf16 mixed precision"
NEW_WORKLOADS = (
    ("GPT-2 (batch size 8)", "GPT-2", 8, _GPT2),
    ("GPT-2 (batch size 16)", "GPT-2", 16, _GPT2),
    ("ViT (batch size 32)", "ViT", 32, _VIT),
    ("ViT (batch size 64)", "ViT", 64, _VIT),
)


def cases_for(gpu_count: int) -> list[Case]:
    """The cases a node with `gpu_count` GPUs of one type runs: every 1-GPU case and pair, and
    the data-parallel cases of at most that many GPUs."""
    return [case for case in CASES if case.num_gpus <= gpu_count]


def select(names: list[str]) -> list[Case]:
    """The named cases in the order given; KeyError names the first unknown one."""
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise KeyError(unknown[0])
    return [BY_NAME[name] for name in names]
