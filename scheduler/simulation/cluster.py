"""The simulated cluster: Gavel's 108 GPUs (36 K80, 36 P100, 36 V100) on servers of 4 GPUs,
with the GPU types' facts (memory, idle power, TDP, linear power curve) from
catalog.gpu_type_defaults, and the power limits a solver may set on each type: 60, 70, 80 and
90 % of its default limit (TDP), within NVML's allowed range on these boards and above the
lowest fraction Zeus measured (docs/power_limits.md). A job on more GPUs than one server holds runs spread over servers
(Gavel's "unconsolidated" measurements)."""
from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from scheduler.optimizer.power import PowerCurve
from scheduler.optimizer.problem import GpuSpec, GpuTypeSpec

DEFAULT_LAYOUT = (("k80", 36), ("p100", 36), ("v100", 36))
LIMIT_FRACTIONS = (0.6, 0.7, 0.8, 0.9)
GPUS_PER_SERVER = 4


def gpu_types(names) -> dict[str, GpuTypeSpec]:
    """Specs of the named types; ValueError for a type without defaults."""
    known = {d.name: d for d in GPU_TYPE_DEFAULTS}
    missing = sorted(set(names) - set(known))
    if missing:
        raise ValueError(f"no GPU type defaults for {', '.join(missing)}; known: {', '.join(sorted(known))}")
    return {
        name: GpuTypeSpec(name, known[name].memory_gb, known[name].idle_w, known[name].tdp_w,
                          PowerCurve.from_points(known[name].power_curve, known[name].idle_w, known[name].tdp_w),
                          power_limits_w=tuple(round(known[name].tdp_w * f) for f in LIMIT_FRACTIONS))
        for name in names
    }


def build_gpus(layout=DEFAULT_LAYOUT, per_server: int = GPUS_PER_SERVER) -> tuple[GpuSpec, ...]:
    gpus = []
    for gpu_type, count in layout:
        for i in range(count):
            node = f"{gpu_type}-s{i // per_server}"
            gpus.append(GpuSpec(f"{node}-g{i % per_server}", node, gpu_type))
    return tuple(gpus)
