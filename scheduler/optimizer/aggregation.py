"""GPUs aggregated by type and node shape, so the model does not grow with identical GPUs.

The solvers see, per GPU type, only capacity levels: for a block size s (1, 2, 4, 8, ...),
the GPUs that blocks of s consolidated GPUs can use, sum over nodes of floor(gpus/s) * s.
Job sizes are powers of two, so sizes divide one another; for such sizes a set of
consolidated jobs fits onto the nodes exactly when, for every s, the jobs of size >= s need
no more than level s offers (first-fit decreasing then packs them), which is what
scheduler.optimizer.placement does afterwards onto concrete GPUs.
"""
from collections import Counter, defaultdict
from dataclasses import dataclass

from .problem import GpuSpec


def block_sizes(largest: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to `largest`."""
    sizes, s = [], 1
    while s <= max(1, largest):
        sizes.append(s)
        s *= 2
    return tuple(sizes)


@dataclass(frozen=True)
class TypeCapacity:
    gpu_type: str
    node_shape: tuple[tuple[int, int], ...]  # (GPUs on a node, how many such nodes)
    levels: dict[int, int]  # block size -> GPUs usable in blocks of that size

    @property
    def gpus(self) -> int:
        return self.levels.get(1, 0)

    @property
    def largest_node(self) -> int:
        return max((size for size, _ in self.node_shape), default=0)

    @property
    def nodes(self) -> int:
        return sum(count for _, count in self.node_shape)


def aggregate(gpus: tuple[GpuSpec, ...]) -> dict[str, TypeCapacity]:
    """Per GPU type: node shapes and capacity levels."""
    per_node: dict[str, Counter] = defaultdict(Counter)
    for gpu in gpus:
        per_node[gpu.gpu_type][gpu.node] += 1
    capacity = {}
    for gpu_type, nodes in sorted(per_node.items()):
        shape = Counter(nodes.values())
        largest = max(shape)
        levels = {s: sum(n * (size // s) * s for size, n in shape.items()) for s in block_sizes(largest)}
        capacity[gpu_type] = TypeCapacity(gpu_type, tuple(sorted(shape.items())), levels)
    return capacity


def usage_levels(num_gpus: int, consolidated: bool, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The block sizes a choice counts against: every s <= k when consolidated, else only 1."""
    if not consolidated or num_gpus == 1:
        return (1,)
    return tuple(s for s in sizes if s <= num_gpus)
