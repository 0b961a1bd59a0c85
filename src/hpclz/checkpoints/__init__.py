"""Checkpoint integrity: `manifest` (what a manifest holds, signs and compares; standard library and pydantic only)
and `seal` (hash the checkpoint containers through hpclz.azure.checkpoints, write, seal and verify manifests)."""
