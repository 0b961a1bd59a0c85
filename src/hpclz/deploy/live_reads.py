"""Preflight reads of what `existing` blocks name: the NSGs on an existing VNet's subnets, the hub's gateways,
an existing Managed Lustre file system, an existing NetApp account's volumes and an existing Key Vault.

Each read that fails is recorded in `ctx.unavailable` (HPCLZ-CMP-106 reports it) instead of stopping preflight.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from hpclz.azure import existing
from hpclz.azure.arm import Arm
from hpclz.azure.errors import describe, sdk_error
from hpclz.config.identity import ExistingKeyVault
from hpclz.config.storage import ExistingLustre, ExistingNetApp
from hpclz.rules.live.context import LiveContext


def _read(ctx: LiveContext, what: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except sdk_error() as exc:
        ctx.unavailable[what] = describe(exc).one_line()
        return None


def subnet_nsg_ids(vnet: dict[str, Any]) -> list[str]:
    """The NSGs attached to the VNet's subnets, as VirtualNetworks - Get names them (subnets[].networkSecurityGroup)."""
    ids = []
    for subnet in (vnet.get("properties") or {}).get("subnets") or []:
        nsg = ((subnet.get("properties") or {}).get("networkSecurityGroup") or {}).get("id")
        if nsg and str(nsg).lower() not in ids:
            ids.append(str(nsg).lower())
    return ids


def read_existing(arm: Arm, ctx: LiveContext) -> None:
    """After the existing VNet and the hub were read (their NSG IDs and group come from those answers)."""
    _read_network(arm, ctx)
    _read_storage(arm, ctx)
    vault = ctx.loaded.config.identity.key_vault
    if isinstance(vault, ExistingKeyVault):
        _read_vault(arm, ctx, vault.resource_id)


def _read_network(arm: Arm, ctx: LiveContext) -> None:
    for nsg_id in subnet_nsg_ids(ctx.existing_vnet or {}):
        body = _read(ctx, f"network security group {nsg_id}", partial(existing.network_security_group, arm, nsg_id))
        ctx.nsgs[nsg_id] = body or {}
    hub = ctx.loaded.config.network.hub_peering
    if hub is not None and hub.use_remote_gateways and ctx.hub_vnet:
        what = f"gateways beside {hub.remote_vnet_id}"
        ctx.hub_gateways = _read(ctx, what, partial(existing.virtual_network_gateways, arm, hub.remote_vnet_id))


def _read_storage(arm: Arm, ctx: LiveContext) -> None:
    storage = ctx.loaded.config.storage
    if isinstance(storage.lustre, ExistingLustre):
        what = f"existing Lustre {storage.lustre.resource_id}"
        body = _read(ctx, what, partial(existing.lustre_file_system, arm, storage.lustre.resource_id))
        if what not in ctx.unavailable:
            ctx.existing_lustre = body or {}
    if isinstance(storage.netapp, ExistingNetApp):
        what = f"existing NetApp account {storage.netapp.account_resource_id}"
        volumes = _read(ctx, what, partial(existing.netapp_volumes, arm, storage.netapp.account_resource_id))
        if what not in ctx.unavailable:
            ctx.netapp_account = volumes is not None
            ctx.netapp_volumes = volumes or []


def _read_vault(arm: Arm, ctx: LiveContext, vault_id: str) -> None:
    what = f"existing Key Vault {vault_id}"
    body = _read(ctx, what, partial(existing.key_vault, arm, vault_id))
    if what not in ctx.unavailable:
        ctx.existing_vault = body or {}
