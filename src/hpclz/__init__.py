"""hpclz: Azure landing zones for HPC and AI training clusters, deployed and verified."""

__version__ = "0.1.0"
