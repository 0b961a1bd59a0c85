"""Every role assignment hpclz renders, as a kind: (role, principal, scope kind). The principal is the config item the
assignment is for, as its ARM description names it ("hpclz: <role> for <config item>", src/hpclz/render/roles.py);
the scope kind is the resource type of its scope, or the resource group (by the deployment's component) or the
subscription the assignment is made at."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from hpclz.config.loader import load_config
from hpclz.render.build import build_plan
from tests.conftest import REPO

PRESETS = ("energy", "finance", "ai-training", "manufacturing")


def _portal_client_secret(data: dict[str, Any]) -> None:
    """The portal with an OIDC client secret in the zone's vault (what
    tests/deploy/test_proving_ground.py::test_the_portal_reads_its_client_secret_and_not_the_slurm_database_password
    deploys): the portal VM's own identity then reads that one secret."""
    data["identity"]["key_vault"]["secrets"]["ood-client-secret"] = "${env:OOD_CLIENT_SECRET}"
    data["portal"]["oidc"]["client_secret_name"] = "ood-client-secret"


# Assignments no preset renders as shipped but a config option adds: (preset, edit) under a name of its own.
VARIANTS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "energy+portal-client-secret": ("energy", _portal_client_secret),
}
ROLE_ASSIGNMENTS = "microsoft.authorization/roleassignments"


@dataclass(frozen=True, order=True)
class Kind:
    role: str
    principal: str
    scope: str

    def __str__(self) -> str:
        return f"{self.role} for {self.principal} at {self.scope}"


def principal_of(description: str) -> tuple[str, str]:
    """(role, config item) from "hpclz: <role> for <config item>[ -> <object ID>][ (<why>)]"."""
    assert description.startswith("hpclz: ") and " for " in description, description
    role, _, rest = description[len("hpclz: ") :].partition(" for ")
    return role, rest.split(" -> ", 1)[0].split(" (", 1)[0]


def scope_kind(scope: str | None, where: str) -> str:
    """A relative resource scope ("Microsoft.Storage/storageAccounts/<n>/blobServices/default/containers/<n>") as
    its type ("Microsoft.Storage/storageAccounts/blobServices/containers"); none: the deployment's own scope."""
    if not scope:
        return where
    parts = scope.strip("/").split("/")
    return "/".join([parts[0], *parts[1::2]])


def _walk(resources: list[dict[str, Any]], where: str) -> Iterator[tuple[Kind, dict[str, Any]]]:
    for r in resources:
        kind = str(r.get("type", "")).lower()
        if kind == "microsoft.resources/deployments":
            nested = (r.get("properties") or {}).get("template") or {}
            inner = "subscription" if "resourceGroup" not in r and "subscriptionId" in r else "resource group (nested)"
            yield from _walk(list(nested.get("resources") or []), inner)
        elif kind == ROLE_ASSIGNMENTS:
            role, principal = principal_of(str((r.get("properties") or {}).get("description", "")))
            yield Kind(role, principal, scope_kind(r.get("scope"), where)), r


@cache
def rendered(preset: str) -> tuple[tuple[Kind, dict[str, Any]], ...]:
    """The preset's role assignments as its plan renders them (no gates: render only)."""
    return tuple((kind, r) for kind, r, _ in _rendered(preset))


@cache
def _rendered(preset: str) -> tuple[tuple[Kind, dict[str, Any], str | None], ...]:
    config = REPO / "configs" / f"{preset}.yaml"
    if preset in VARIANTS:
        base, edit = VARIANTS[preset]
        data = YAML(typ="safe").load((REPO / "configs" / f"{base}.yaml").read_text())
        edit(data)
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "lz.yaml"
            config.write_text(json.dumps(data))  # JSON is YAML
            plan = build_plan(load_config(config).config)
    else:
        plan = build_plan(load_config(config).config)
    out: list[tuple[Kind, dict[str, Any], str | None]] = []
    for d in plan.deployments:
        where = "subscription" if d.scope == "subscription" else f"resource group ({d.component})"
        out.extend((kind, r, d.resource_group) for kind, r in _walk(d.resources(), where))
    return tuple(out)


def kind_of(preset: str, grant: dict[str, Any]) -> Kind:
    """The kind of a role assignment a deploy of the preset made (the stand-in's resource: its description, and its
    scope, or the resource group its ID lies in)."""
    props = grant.get("properties") or {}
    role, principal = principal_of(str(props.get("description", "")))
    scope = str(props.get("scope") or str(grant["id"]).lower().split("/providers/microsoft.authorization/")[0])
    if "/providers/" in scope:
        return Kind(role, principal, scope_kind(scope.split("/providers/", 1)[1], ""))
    if "/resourcegroups/" not in scope.lower():
        return Kind(role, principal, "subscription")
    group = scope.lower().split("/resourcegroups/", 1)[1].split("/")[0]
    for kind, r, rg in _rendered(preset):
        if (kind.role, kind.principal) == (role, principal) and not r.get("scope") and (rg or "").lower() == group:
            return kind
    raise LookupError(f"{preset} renders no {role} for {principal} at resource group {group}")


def kinds() -> dict[Kind, set[str]]:
    """Every kind any preset (or variant) renders, with the presets that render it."""
    found: dict[Kind, set[str]] = {}
    for preset in (*PRESETS, *VARIANTS):
        for kind, _ in rendered(preset):
            found.setdefault(kind, set()).add(preset)
    return found
