"""Workload features P1 learns from, for the 7 reference families and the benchmark suite's
2 current shapes (GPT-2, ViT; catalog/profiling), and the feature vector.

Per-family facts (parameters, forward+backward FLOPs per sample, the unit a "sample" is) come
from the papers and the reference implementations Gavel ran (docs/predictors.md gives each
source and derivation). Compute density and memory intensity are per-family judgements on a
0..1 scale, argued in docs/predictors.md; communication overhead is derived per workload from
parameters, FLOPs and batch size (`communication_overhead`), so no value is read off the
throughputs the predictors are evaluated on.
"""
import math
from dataclasses import dataclass

#: Assumed effective rates for the communication-overhead formula: 10 TFLOP/s of compute and
#: a 10 GB/s all-reduce link (PCIe 3 x16 class), i.e. the reference V100/P100 servers.
_EFFECTIVE_FLOPS = 10e12
_ALLREDUCE_BYTES_PER_S = 10e9


@dataclass(frozen=True, slots=True)
class FamilyFacts:
    parameters: int
    flops_per_sample: float  # forward + backward, per sample of the family's unit
    compute_density: float
    memory_intensity: float
    source: str


REFERENCE_FAMILIES: dict[str, FamilyFacts] = {
    "ResNet-18": FamilyFacts(
        11_173_962, 3.3e9, 0.85, 0.45,
        "He et al. 2016; CIFAR-10 variant (kuangliu/pytorch-cifar): 0.56 GMAC forward at 32x32",
    ),
    "ResNet-50": FamilyFacts(
        25_557_032, 2.46e10, 0.90, 0.40, "He et al. 2016: 4.1 GMAC forward at 224x224; torchvision parameter count"
    ),
    "Transformer": FamilyFacts(
        44_000_000, 7.9e9, 0.70, 0.55,
        "Vaswani et al. 2017 base (d=512, 6+6 layers) with Multi30k vocabularies; 6 x params x ~30 tokens",
    ),
    "LM": FamilyFacts(
        13_990_000, 1.53e9, 0.40, 0.70,
        "PyTorch word_language_model defaults (2-layer LSTM, 200 units, 33,278-word Wikitext-2 vocabulary, bptt 35)",
    ),
    "Recommendation": FamilyFacts(
        29_000_000, 1.74e8, 0.30, 0.85,
        "Kuchaiev & Ginsburg 2017 autoencoder (n_items-512-512-1024) on ML-20M's ~27k items; 6 x params",
    ),
    "A3C": FamilyFacts(
        600_000, 2.8e8, 0.20, 0.30,
        "Mnih et al. 2016 A3C, ikostrikov/pytorch-a3c (4 conv + LSTM 256) on 42x42 frames, 20-step rollout",
    ),
    "CycleGAN": FamilyFacts(
        28_286_000, 1.37e12, 0.90, 0.60,
        "Zhu et al. 2017: 2 ResNet-9 generators (11.4M) + 2 PatchGANs (2.8M), ~57 GMAC per generator pass at 256x256",
    ),
    "GPT-2": FamilyFacts(
        124_439_808, 8.2e11, 0.85, 0.55,
        "Radford et al. 2019 GPT-2 small (12 layers, d=768, 50,257-token tied vocabulary) on 1024-token sequences: "
        "6 x params x 1024 + attention 6 x 12 layers x 1024 x 768 per token (Kaplan et al. 2020)",
    ),
    "ViT": FamilyFacts(
        86_567_656, 1.06e11, 0.85, 0.45,
        "Dosovitskiy et al. 2021 ViT-B/16 at 224x224 (197 tokens): 17.6 GMAC forward (Touvron et al. 2021)",
    ),
}

FEATURE_NAMES = (
    "log_parameters",
    "log_flops_per_sample",
    "log_batch_size",
    "compute_density",
    "memory_intensity",
    "communication_overhead",
)


@dataclass(frozen=True, slots=True)
class WorkloadFeatures:
    """What is known of a workload before it runs; None = unknown (filled by the catalog mean)."""

    name: str
    family: str
    batch_size: int | None = None
    parameters: float | None = None
    flops_per_sample: float | None = None
    compute_density: float | None = None
    memory_intensity: float | None = None
    communication_overhead: float | None = None


def communication_overhead(parameters: float, flops_per_sample: float, batch_size: int | None) -> float:
    """Share of a data-parallel step spent in the gradient all-reduce, c / (1 + c), where
    c = (2 x 4-byte gradients / link rate) / (batch FLOPs / compute rate)."""
    allreduce_s = 2 * 4 * parameters / _ALLREDUCE_BYTES_PER_S
    compute_s = flops_per_sample * (batch_size or 1) / _EFFECTIVE_FLOPS
    ratio = allreduce_s / compute_s
    return ratio / (1 + ratio)


def reference_features(name: str, family: str, batch_size: int | None) -> WorkloadFeatures:
    """Features of a workload of a reference family; only the name and batch size otherwise."""
    facts = REFERENCE_FAMILIES.get(family)
    if facts is None:
        return WorkloadFeatures(name=name, family=family, batch_size=batch_size)
    return WorkloadFeatures(
        name=name,
        family=family,
        batch_size=batch_size,
        parameters=facts.parameters,
        flops_per_sample=facts.flops_per_sample,
        compute_density=facts.compute_density,
        memory_intensity=facts.memory_intensity,
        communication_overhead=communication_overhead(facts.parameters, facts.flops_per_sample, batch_size),
    )


def feature_vector(features: WorkloadFeatures) -> list[float | None]:
    """The raw vector in FEATURE_NAMES order; logs tame the orders of magnitude."""

    def log(value):
        return None if value is None else math.log(max(value, 1.0))

    return [
        log(features.parameters),
        log(features.flops_per_sample),
        log(features.batch_size or 1),
        features.compute_density,
        features.memory_intensity,
        features.communication_overhead,
    ]
