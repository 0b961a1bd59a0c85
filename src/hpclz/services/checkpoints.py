"""`hpclz checkpoints manifest|verify`: load the config, then hpclz.checkpoints.seal seals the checkpoint containers'
blobs in a manifest, or proves them unchanged (exit 1 when a blob changed, went missing or appeared, or the
manifest's signature does not hold)."""

from __future__ import annotations

from hpclz.checkpoints import seal
from hpclz.checkpoints.seal import CheckpointsOptions, ManifestResult, VerifyResult
from hpclz.config.loader import load_config
from hpclz.errors import ExitCode
from hpclz.output import CommandResult

__all__ = ["CheckpointsOptions", "ManifestResult", "VerifyResult", "verify_checkpoints", "write_manifest"]


def write_manifest(opts: CheckpointsOptions) -> CommandResult[ManifestResult]:
    result = seal.write_manifest(load_config(opts.config).config, opts)
    return CommandResult(command="checkpoints manifest", payload=result)


def verify_checkpoints(opts: CheckpointsOptions) -> CommandResult[VerifyResult]:
    result = seal.verify_checkpoints(load_config(opts.config).config, opts)
    code = ExitCode.OK if result.ok else ExitCode.FAILED
    return CommandResult(command="checkpoints verify", payload=result, exit_code=code)
