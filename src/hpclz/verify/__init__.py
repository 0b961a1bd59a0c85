"""Verify: node-health checks and NCCL tests on the deployed cluster, dispatched through Slurm."""
