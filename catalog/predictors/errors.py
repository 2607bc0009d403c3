"""Errors a caller can act on: the message names what is missing and what is known."""


class UnknownWorkload(KeyError):
    """A workload the catalog has no features or measurements for."""

    def __str__(self):
        return str(self.args[0]) if self.args else "unknown workload"


class UnknownGpuType(KeyError):
    """A GPU type with no measurements in the catalog: nothing to predict from."""

    def __str__(self):
        return str(self.args[0]) if self.args else "unknown GPU type"
