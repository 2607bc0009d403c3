"""The demo cluster as plain data (no Django): four nodes of three GPU generations.

`manage.py load_demo_cluster` registers it; the cluster simulator reuses it, so both describe
the same machines. Layout follows common dual-socket servers: the GPUs split evenly across two
PCIe switches, each switch under one CPU socket (NUMA node). A K80 board carries two GPUs, so
an 8-GPU K80 machine holds four boards. UUIDs are the simulated agent's (uuid5 of host name and
index, telemetry.agent.simulated.gpu_uuid): the same on every load, so loading twice changes
nothing, and a simulated agent for a demo node reports the GPUs registered here.
"""
from dataclasses import dataclass, field

from .agent.simulated import gpu_uuid

DEMO_AGENT_USERNAME = "demo-agent"
DEMO_AGENT_VERSION = "demo"

# PCI bus ids of 8 slots: the first four behind socket 0, the last four behind socket 1.
_BUS_IDS = ["04", "05", "08", "09", "84", "85", "88", "89"]


@dataclass(frozen=True)
class DemoGpu:
    index: int
    uuid: str
    gpu_type: str
    product_name: str
    pci_bus_id: str
    pcie_switch: str
    numa_node: int
    memory_gb: float


@dataclass(frozen=True)
class DemoNode:
    hostname: str
    cell: str
    labels: dict = field(hash=False)
    gpus: tuple[DemoGpu, ...]

    def registration(self) -> dict:
        """Keyword arguments of telemetry.services.node_register, less the agent account."""
        return {
            "hostname": self.hostname,
            "labels": dict(self.labels),
            "cell": self.cell,
            "agent_version": DEMO_AGENT_VERSION,
            "gpus": [vars(gpu).copy() for gpu in self.gpus],
        }


def _node(
    hostname: str, cell: str, rack: str, zone: str, gpu_type: str, product_name: str, memory_gb: float, count: int
) -> DemoNode:
    """A node whose `count` GPUs split in two halves: switch 0 / NUMA 0 and switch 1 / NUMA 1."""
    half = count // 2
    bus_ids = _BUS_IDS[:half] + _BUS_IDS[4 : 4 + half]
    gpus = tuple(
        DemoGpu(
            index=index,
            uuid=gpu_uuid(hostname, index),
            gpu_type=gpu_type,
            product_name=product_name,
            pci_bus_id=f"00000000:{bus_ids[index]}:00.0",
            pcie_switch=f"pcie-sw{index // half}",
            numa_node=index // half,
            memory_gb=memory_gb,
        )
        for index in range(count)
    )
    return DemoNode(hostname=hostname, cell=cell, labels={"rack": rack, "zone": zone}, gpus=gpus)


DEMO_NODES: tuple[DemoNode, ...] = (
    _node("demo-k80-01", "cell-a", "r01", "zone-1", "k80", "Tesla K80", 12, 8),
    _node("demo-k80-02", "cell-a", "r01", "zone-1", "k80", "Tesla K80", 12, 8),
    _node("demo-p100-01", "cell-b", "r02", "zone-1", "p100", "Tesla P100-PCIE-16GB", 16, 4),
    _node("demo-v100-01", "cell-b", "r03", "zone-2", "v100", "Tesla V100-SXM2-16GB", 16, 8),
)


def simulated_agent_args(node: DemoNode, seed: int) -> list[str]:
    """Flags of `python -m telemetry.agent --simulate` that make an agent report exactly this node."""
    counts: dict[str, int] = {}
    for gpu in node.gpus:
        counts[gpu.gpu_type] = counts.get(gpu.gpu_type, 0) + 1
    labels = [arg for key, value in sorted(node.labels.items()) for arg in ("--label", f"{key}={value}")]
    gpus = ",".join(f"{name}:{count}" for name, count in counts.items())
    return [
        "--simulate", "--hostname", node.hostname, "--cell", node.cell, "--gpus", gpus, "--seed", str(seed), *labels
    ]


def demo_gpu_types() -> list[str]:
    """The GPU types the demo cluster needs, by name."""
    return sorted({gpu.gpu_type for node in DEMO_NODES for gpu in node.gpus})
