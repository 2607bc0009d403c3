"""Registration bodies for tests, as agents would send them."""


def gpu_report(index, *, hostname="node1", **fields):
    """One device of a registration; uuid derived from host and index unless given."""
    return {"index": index, "uuid": f"GPU-{hostname}-{index}", "gpu_type": "v100", **fields}


def node_report(hostname="node1", gpus=None, **fields):
    """A registration body: `gpus` defaults to four V100s on two switches."""
    if gpus is None:
        gpus = [
            gpu_report(i, hostname=hostname, pcie_switch=f"sw{i // 2}", numa_node=i // 2, pci_bus_id=f"0000:0{i}:00.0")
            for i in range(4)
        ]
    return {
        "hostname": hostname, "labels": {"rack": "r1"}, "cell": "cell-a", "agent_version": "1.0", "gpus": gpus, **fields
    }
