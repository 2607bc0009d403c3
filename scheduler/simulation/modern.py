"""The modern cluster (`simulate --cluster modern`): T4, A100 and H100, a truth synthesized for
those types, and the profiling campaign that first measures them.

Nobody published Gavel-style measurements on these types, so the truth is made from the
reference data's V100 rows by a model of its own, on purpose not the datasheet model the
catalog's estimates for unmeasured types use (catalog.predictors.gpu_specs: FP32 and memory
bandwidth only, no per-step overhead): a step on V100 is a fixed per-step overhead (kernel
launches, the input pipeline, the optimizer's bookkeeping: STEP_OVERHEAD_S, at most
MAX_OVERHEAD_SHARE of the step) plus compute, and only the compute part speeds up, by a gain per
family and type (FAMILY_GAINS: TF32 tensor cores for convolutions and matrix multiplies on A100
and H100, memory bandwidth for embeddings and LSTMs, little for A3C's small networks). So small
batches gain less than large ones: the A100/T4 speed-up runs from about 1.2 (LM at batch 5,
mostly overhead) to 3.7 (ResNet at large batches), the range issue 18 reports as measured. A
multi-GPU or spread configuration gets its workload's 1-GPU speed-up (interconnects are
assumed to improve alike); a pair row scales each side by its own workload's speed-up, so
co-located fractions stay as on V100. Power and utilization: the types' power curves (the
reference data has no power), GPU memory is not modelled (as everywhere in the simulator).

The campaign: at the start one server of each type runs the suite (catalog/profiling/cases.py,
the cases of a 4-GPU node whose workloads the reference data has: 17 alone, 4 pairs, 8
data-parallel on 2 and 4 GPUs) for CAMPAIGN_S, its GPUs busy and unavailable to jobs; then the
cases' true values (the truth with its per-workload deviation) with the rounds' noise enter the
catalog as `profiling` measurements, and `gogh`'s predictor is fitted again on the catalog
(learned.py), as `train_predictor` would after a campaign in production.
"""
from dataclasses import dataclass

from catalog.gavel import parse_workload
from catalog.measurement_record import MeasurementRecord

MODERN_LAYOUT = (("t4", 44), ("a100", 40), ("h100", 24))
SOURCE_TYPE = "v100"
STEP_OVERHEAD_S = 0.010
MAX_OVERHEAD_SHARE = 0.8
#: Speed-up of a step's compute part over V100, per family: (t4, a100, h100).
FAMILY_GAINS = {
    "ResNet-18": (0.6, 2.2, 3.6),
    "ResNet-50": (0.6, 2.2, 3.6),
    "CycleGAN": (0.6, 2.2, 3.6),
    "Transformer": (0.55, 2.0, 3.4),
    "LM": (0.5, 1.6, 2.4),
    "Recommendation": (0.45, 1.7, 3.5),
    "A3C": (0.8, 1.15, 1.25),
}
MODERN_TYPES = tuple(name for name, _ in MODERN_LAYOUT)
#: docs/profiling.md's target for the suite's 1-GPU part on one GPU of a current type; the
#: campaign is modelled as holding one server this long.
CAMPAIGN_S = 20 * 60.0
#: The suite's cases (catalog/profiling/cases.py) the reference data lets the simulator run:
#: (workload, partner or None, GPUs); GPT-2 and ViT have no truth here and are left out.
SUITE_CASES = (
    *((w, None, 1) for w in (
        "ResNet-18 (batch size 32)", "ResNet-18 (batch size 128)", "ResNet-18 (batch size 256)",
        "ResNet-50 (batch size 16)", "ResNet-50 (batch size 64)", "ResNet-50 (batch size 128)",
        "Transformer (batch size 32)", "Transformer (batch size 128)", "Transformer (batch size 256)",
        "LM (batch size 5)", "LM (batch size 20)", "LM (batch size 80)",
        "Recommendation (batch size 512)", "Recommendation (batch size 2048)", "Recommendation (batch size 8192)",
        "A3C", "CycleGAN",
    )),
    ("ResNet-50 (batch size 64)", "ResNet-18 (batch size 128)", 1),
    ("ResNet-50 (batch size 64)", "LM (batch size 20)", 1),
    ("Recommendation (batch size 2048)", "LM (batch size 20)", 1),
    ("Transformer (batch size 128)", "A3C", 1),
    *((w, None, k) for k in (2, 4) for w in (
        "ResNet-18 (batch size 128)", "ResNet-50 (batch size 64)", "Transformer (batch size 128)",
        "LM (batch size 20)",
    )),
)


def speedup(workload: str, gpu_type: str, v100_steps_per_s: float) -> float:
    """Steps/s on `gpu_type` over steps/s on V100 for a workload running at that V100 rate."""
    gain = FAMILY_GAINS[parse_workload(workload).family][MODERN_TYPES.index(gpu_type)]
    step_s = 1.0 / v100_steps_per_s
    overhead = min(STEP_OVERHEAD_S / step_s, MAX_OVERHEAD_SHARE)
    return 1.0 / (overhead + (1.0 - overhead) / gain)


def modern_truth(reference: list[MeasurementRecord]) -> list[MeasurementRecord]:
    """The modern types' rows, from the reference's V100 rows (module docstring)."""
    alone = {r.workload: r.throughput for r in reference
             if r.gpu_type == SOURCE_TYPE and r.partner is None and r.num_gpus == 1 and r.throughput > 0}
    out = []
    for r in reference:
        if r.gpu_type != SOURCE_TYPE or r.workload not in alone or (r.partner and r.partner not in alone):
            continue
        for gpu_type in MODERN_TYPES:
            mine = speedup(r.workload, gpu_type, alone[r.workload])
            partner = speedup(r.partner, gpu_type, alone[r.partner]) if r.partner else 1.0
            out.append(r._replace(
                gpu_type=gpu_type, throughput=r.throughput * mine, source="reference",
                partner_throughput=None if r.partner_throughput is None else r.partner_throughput * partner,
                reference=f"synthesized from {SOURCE_TYPE} (scheduler/simulation/modern.py)",
            ))
    return out


@dataclass(frozen=True)
class Campaign:
    """One server of each type runs the suite from time 0 for `duration_s`."""

    gpu_ids: tuple[str, ...]
    duration_s: float = CAMPAIGN_S


def campaign_gpus(gpus, gpu_types=MODERN_TYPES) -> tuple[str, ...]:
    """The first server of each type."""
    first = {}
    for g in gpus:
        if g.gpu_type in gpu_types:
            first.setdefault(g.gpu_type, g.node)
    return tuple(g.id for g in gpus if first.get(g.gpu_type) == g.node)


def suite_results(truth, rng, gpu_types=MODERN_TYPES) -> list[MeasurementRecord]:
    """What the campaign measures: each case's true value with the rounds' noise."""
    out = []
    for gpu_type in gpu_types:
        for workload, partner, k in SUITE_CASES:
            if partner is None:
                rate = truth.throughput(workload, gpu_type, k, True)
                partner_rate = None
            else:
                rate = truth.shared_throughput(workload, (partner,), gpu_type)
                partner_rate = truth.observe(truth.shared_throughput(partner, (workload,), gpu_type), rng)
            if rate > 0:
                name = workload if partner is None else f"{workload} + {partner}"
                out.append(MeasurementRecord(
                    workload=workload, gpu_type=gpu_type, throughput=truth.observe(rate, rng), num_gpus=k,
                    partner=partner, partner_throughput=partner_rate, source="profiling",
                    reference=f"gogh-suite/1/{name}" + (f" x{k}" if k > 1 else ""),
                ))
    return out
