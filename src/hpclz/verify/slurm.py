"""Where verify's Slurm adapter used to live: it is shared with the node roll now (hpclz.slurm.client)."""

from hpclz.slurm.client import (
    DRAIN_PREFIX,
    FINISHED_STATES,
    NO_CONFIG,
    NodeInfo,
    SlurmClient,
    SlurmError,
)

__all__ = ["DRAIN_PREFIX", "FINISHED_STATES", "NO_CONFIG", "NodeInfo", "SlurmClient", "SlurmError"]
