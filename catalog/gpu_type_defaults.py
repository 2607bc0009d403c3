"""Default facts for the GPU types GOGH knows out of the box, with where each value comes from.

Plain data, no Django: `catalog_load_reference` creates the missing types from it, and tests or
benchmarks can read it without a database. Values are per GPU, not per board.

Choices that the datasheets leave open:
- P100 is the PCIe 16 GB board (250 W). Gavel's throughput file does not say which variant it
  measured; the P100s rented in clouds (Google Cloud, Azure NCv2) are PCIe boards, and the
  only P100 power measurements in the project (Zeus) are of the PCIe board, so TDP, idle
  power and measured load power then describe the same hardware.
- V100 is the SXM2 16 GB board (300 W): the 16 GB V100 of 8-GPU NVLink servers (DGX-1, AWS
  p3.16xlarge), the form Gavel's consolidated 8-GPU measurements need.
- A100 is the SXM4 40 GB board (400 W), H100 the SXM5 80 GB board (700 W) and H200 the SXM
  141 GB board (700 W), the parts of the 8-GPU HGX servers that clouds rent. Product names match
  by substring, so an H200 NVL board (600 W) and a GH200 superchip also map to `h200` with the
  SXM board's 700 W: an operator with those edits the type or adds one with a longer name.
- L4 (72 W), A10 (150 W) and L40S (350 W) are single-slot/dual-slot PCIe boards with one board
  variant each. Their product-name substrings are short on purpose, because the longest match
  wins: "A10" loses to a100's "A100" on an A100's name, and "L4" loses to l40s's "L40" on an
  L40S's. An L40 (no S: 300 W, the same memory and bandwidth) therefore maps to `l40s`, the
  nearer of the two; an operator with L40s edits the type or adds one named "L40 ".
An operator whose cluster has other variants edits the type (admin or API); reloading the
reference catalog never overwrites an existing type.

Idle power: vendors publish none. For P100 and V100 the lowest average power Zeus measured
under a (light) training load bounds idle from above: 33.3 W (P100 PCIe) and 34.8 W (V100
PCIe). For H200 GOGH's own agent measured it through NVML on one real board, in a VM, in three
runs (77-83 W, 11-12% of TDP).
For the other types the default is 12% of TDP, the ratio the P100 and V100 bounds give
(33/250 = 13%, 35/300 = 12%), a placeholder until an NVML idle measurement replaces it.
"""
from dataclasses import dataclass, field

#: Share of TDP used as idle power where nothing measured bounds it (see the module docstring).
IDLE_SHARE_OF_TDP = 0.12

_IDLE_FROM_SHARE = (
    f"assumption: {IDLE_SHARE_OF_TDP:.0%} of TDP, the idle/TDP ratio of the Zeus bounds for P100 "
    "and V100; vendors publish no idle power; replace with an NVML idle measurement"
)
_POWER_CURVE = (
    "assumption: linear from idle_w at utilization 0 to tdp_w at utilization 1; replace with "
    "an NVML profile of power against utilization on this GPU type"
)
_PRODUCT_NAMES = "substrings of the NVML product name (nvmlDeviceGetName) of this GPU type"


@dataclass(frozen=True)
class GpuTypeDefault:
    name: str
    description: str
    memory_gb: float
    tdp_w: float
    idle_w: float
    product_names: tuple[str, ...]
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def power_curve(self) -> list[list[float]]:
        return [[0.0, self.idle_w], [1.0, self.tdp_w]]

    @property
    def provenance(self) -> dict[str, str]:
        return {**self.sources, "power_curve": _POWER_CURVE, "product_names": _PRODUCT_NAMES}

    def model_fields(self) -> dict:
        """Field values of a GpuType row (catalog.models.GpuType) built from these defaults."""
        return {
            "name": self.name,
            "description": self.description,
            "memory_gb": self.memory_gb,
            "tdp_w": self.tdp_w,
            "idle_w": self.idle_w,
            "power_curve": self.power_curve,
            "provenance": self.provenance,
            "product_names": list(self.product_names),
        }


GPU_TYPE_DEFAULTS: tuple[GpuTypeDefault, ...] = (
    GpuTypeDefault(
        name="k80",
        description="NVIDIA Tesla K80, one of the board's two GK210 GPUs",
        memory_gb=12,
        tdp_w=150,
        idle_w=round(IDLE_SHARE_OF_TDP * 150),
        product_names=("Tesla K80",),
        sources={
            "memory_gb": "NVIDIA Tesla K80 datasheet: 24 GB per board of two GPUs, 12 GB per GPU",
            "tdp_w": "NVIDIA Tesla K80 datasheet: 300 W per board of two GPUs, about 150 W per GPU",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="p100",
        description="NVIDIA Tesla P100 PCIe 16 GB",
        memory_gb=16,
        tdp_w=250,
        idle_w=33,
        product_names=("P100",),
        sources={
            "memory_gb": "NVIDIA Tesla P100 datasheet: 16 GB (PCIe 16 GB variant)",
            "tdp_w": "NVIDIA Tesla P100 datasheet: PCIe 250 W (SXM2 300 W); PCIe chosen, see "
            "catalog/gpu_type_defaults.py",
            "idle_w": "upper bound: lowest average power under load in Zeus summary_power_p100.csv "
            "(P100 PCIe, ncf/movielens-1m, 33.3 W); replace with an NVML idle measurement",
        },
    ),
    GpuTypeDefault(
        name="v100",
        description="NVIDIA Tesla V100 SXM2 16 GB",
        memory_gb=16,
        tdp_w=300,
        idle_w=35,
        product_names=("V100",),
        sources={
            "memory_gb": "NVIDIA Tesla V100 datasheet: 16 GB variant (Gavel's V100)",
            "tdp_w": "NVIDIA Tesla V100 datasheet: SXM2 300 W (PCIe 250 W); SXM2 chosen, see "
            "catalog/gpu_type_defaults.py",
            "idle_w": "upper bound: lowest average power under load in Zeus summary_power_v100.csv "
            "(V100 PCIe, ncf/movielens-1m, 34.8 W), assumed to hold for SXM2; replace with an "
            "NVML idle measurement",
        },
    ),
    GpuTypeDefault(
        name="t4",
        description="NVIDIA T4 16 GB",
        memory_gb=16,
        tdp_w=70,
        idle_w=round(IDLE_SHARE_OF_TDP * 70),
        # Not plain "T4": that substring also matches the NVIDIA T400 workstation card.
        product_names=("Tesla T4",),
        sources={
            "memory_gb": "NVIDIA T4 datasheet: 16 GB",
            "tdp_w": "NVIDIA T4 datasheet: 70 W",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="a100",
        description="NVIDIA A100 SXM4 40 GB",
        memory_gb=40,
        tdp_w=400,
        idle_w=round(IDLE_SHARE_OF_TDP * 400),
        product_names=("A100",),
        sources={
            "memory_gb": "NVIDIA A100 datasheet: 40 GB variant",
            "tdp_w": "NVIDIA A100 datasheet: SXM4 400 W (PCIe 40 GB 250 W, PCIe 80 GB 300 W); "
            "SXM4 chosen, see catalog/gpu_type_defaults.py",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="h100",
        description="NVIDIA H100 SXM5 80 GB",
        memory_gb=80,
        tdp_w=700,
        idle_w=round(IDLE_SHARE_OF_TDP * 700),
        product_names=("H100",),
        sources={
            "memory_gb": "NVIDIA H100 datasheet: 80 GB",
            "tdp_w": "NVIDIA H100 datasheet: SXM5 700 W (PCIe 350 W); SXM5 chosen, see "
            "catalog/gpu_type_defaults.py",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="h200",
        description="NVIDIA H200 SXM 141 GB",
        memory_gb=141,
        tdp_w=700,
        idle_w=80,
        product_names=("H200",),
        sources={
            "memory_gb": "NVIDIA H200 datasheet: 141 GB HBM3e",
            "tdp_w": "NVIDIA H200 datasheet: SXM up to 700 W (NVL up to 600 W); SXM chosen, see "
            "catalog/gpu_type_defaults.py",
            "idle_w": "NVML measurement: GOGH's agent on one H200 SXM board in a VM (driver 580.159.04), "
            "three runs of 19 samples at 1 Hz with nothing running: 78.0-78.1, 82.4-82.6 and 77.3-77.5 W "
            "(tests/device/h200_check.sh, 2026-11-30)",
        },
    ),
    GpuTypeDefault(
        name="l4",
        description="NVIDIA L4 24 GB",
        memory_gb=24,
        tdp_w=72,
        idle_w=round(IDLE_SHARE_OF_TDP * 72),
        product_names=("L4",),
        sources={
            "memory_gb": "NVIDIA L4 datasheet: 24 GB GDDR6",
            "tdp_w": "NVIDIA L4 datasheet: 72 W max thermal design power",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="a10",
        description="NVIDIA A10 24 GB",
        memory_gb=24,
        tdp_w=150,
        idle_w=round(IDLE_SHARE_OF_TDP * 150),
        # "A10" also matches an A100's name, where a100's longer "A100" wins; covers the A10G.
        product_names=("A10",),
        sources={
            "memory_gb": "NVIDIA A10 datasheet: 24 GB GDDR6",
            "tdp_w": "NVIDIA A10 datasheet: 150 W max thermal design power",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
    GpuTypeDefault(
        name="l40s",
        description="NVIDIA L40S 48 GB",
        memory_gb=48,
        tdp_w=350,
        idle_w=round(IDLE_SHARE_OF_TDP * 350),
        product_names=("L40S", "L40"),
        sources={
            "memory_gb": "NVIDIA L40S datasheet: 48 GB GDDR6 with ECC",
            "tdp_w": "NVIDIA L40S datasheet: 350 W max power consumption",
            "idle_w": _IDLE_FROM_SHARE,
        },
    ),
)
