from .gpus import Gpu, GpuState
from .nodes import Node, NodeManager, NodeState
from .samples import GpuSample, GpuSampleMinute
from .silence import SilenceWatch

__all__ = ["Gpu", "GpuSample", "GpuSampleMinute", "GpuState", "Node", "NodeManager", "NodeState", "SilenceWatch"]
