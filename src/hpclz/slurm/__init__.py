"""Slurm's client commands, shared by verify (health checks, drain) and the node operations (roll)."""
