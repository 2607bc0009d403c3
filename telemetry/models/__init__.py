from .gpus import Gpu, GpuState
from .nodes import Node, NodeState

__all__ = ["Gpu", "GpuState", "Node", "NodeState"]
