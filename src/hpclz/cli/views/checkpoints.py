"""`hpclz checkpoints manifest|verify` for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.checkpoints import ManifestResult, VerifyResult

_SIGNATURE = {
    "valid": "signature valid",
    "invalid": "[red]signature INVALID: the manifest was changed or signed with another key[/]",
    "unsigned": "[red]manifest UNSIGNED although manifest_key is set[/]",
    "not-checked": "signature not checked (no manifest_key in the config)",
}


def show_manifest(out: Console, result: CommandResult[ManifestResult]) -> None:
    for sealed in result.payload.containers:
        signed = "signed" if sealed.signed else "unsigned"
        out.print(escape(f"{sealed.container}: sealed {sealed.files} blobs in {sealed.manifest} ({signed})"))
        if sealed.retained_until is not None:
            mode = "LOCKED, irreversible" if sealed.locked else "unlocked"
            until = sealed.retained_until.strftime("%Y-%m-%d %H:%M UTC")
            out.print(f"  blobs and manifest are immutable until {until} ({mode})")


def show_verify(out: Console, result: CommandResult[VerifyResult]) -> None:
    for check in result.payload.containers:
        sealed = check.sealed_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        out.print(escape(f"{check.container}: {check.matched} blobs match {check.manifest} (sealed {sealed})"))
        out.print(f"  {_SIGNATURE[check.signature]}")
        for label, names in (
            ("modified", check.modified),
            ("missing", check.missing),
            ("unexpected", check.unexpected),
        ):
            for name in names:
                out.print(f"  [red]{label}[/]: {escape(name)}")
    verdict = "all checkpoints intact" if result.ok else "[red]checkpoint integrity FAILED[/]"
    out.print(verdict)
