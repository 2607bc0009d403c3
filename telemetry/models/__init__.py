from .gpus import Gpu, GpuState
from .nodes import Node, NodeManager, NodeState
from .power_curves import GpuPowerCurve
from .samples import GpuSample, GpuSampleMinute
from .silence import SilenceWatch

__all__ = [
    "Gpu", "GpuPowerCurve", "GpuSample", "GpuSampleMinute", "GpuState",
    "Node", "NodeManager", "NodeState", "SilenceWatch",
]
