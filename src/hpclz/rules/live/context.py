"""What live preflight knows: the facts the adapter read from Azure, gathered for the live rules to compare.

`FactsReported` is the shape four rules share: each fact Azure reported is one finding at one config path.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hpclz.config.loader import LoadedConfig
from hpclz.config.source_map import PathPart, SourceMap
from hpclz.findings import Finding
from hpclz.rules.base import Rule


@dataclass
class LiveContext:
    loaded: LoadedConfig
    location: str
    unregistered: dict[str, str] = field(default_factory=dict)  # namespace -> registration state
    validation_errors: dict[str, str] = field(default_factory=dict)  # deployment -> innermost ARM error
    skus: list[dict[str, Any]] | None = None  # None: the SKU API could not be read
    usages: list[dict[str, Any]] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)  # which live API failed -> why
    features: dict[str, str] = field(default_factory=dict)  # "Namespace/Feature" the templates need -> state
    existing_vnet: dict[str, Any] | None = None  # network.vnet existing, as read; {}: absent; None: not read
    deleted_vault: dict[str, Any] | None = None  # a soft-deleted vault holding the Key Vault's name, if any
    hub_vnet: dict[str, Any] | None = None  # network.hub_peering's remote VNet as read; {}: absent; None: not read
    names_taken: dict[str, str] = field(default_factory=dict)  # global name this zone would create -> ARM's reason
    images: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # custom image ID -> ARM body, None: 404
    marketplace_images: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # pinned URN -> body
    # "publisher:product:plan" of each VM purchase plan the templates name -> Marketplace terms accepted?
    marketplace_terms: dict[str, bool] = field(default_factory=dict)
    network_watcher: dict[str, Any] | None = None  # the flow log's Network Watcher as read; {}: absent; None: not read
    vnet_exists: bool = False  # the zone's VNet is already there (then Azure would have enabled the watcher)
    # What `existing` blocks name, as read (hpclz.deploy.live_reads); {}: absent, None: not read.
    nsgs: dict[str, dict[str, Any]] = field(default_factory=dict)  # NSG ID (lower case) on an existing subnet -> body
    hub_gateways: list[dict[str, Any]] | None = None  # virtual network gateways in the hub VNet's resource group
    existing_lustre: dict[str, Any] | None = None
    existing_vault: dict[str, Any] | None = None
    netapp_account: bool | None = None  # storage.netapp's existing account exists
    netapp_volumes: list[dict[str, Any]] = field(default_factory=list)  # every volume of that account

    @property
    def source(self) -> SourceMap | None:
        return self.loaded.source

    def vm_sizes(self) -> list[tuple[tuple[str | int, ...], str, int]]:
        """(config path, VM size, node count at full scale) for every VM role."""
        return [(path, size, count) for path, size, count, _spot in self.vm_roles()]

    def vm_roles(self) -> list[tuple[tuple[str | int, ...], str, int, bool]]:
        """(config path, VM size, node count at full scale, spot?) for every VM role."""
        compute = self.loaded.config.compute
        out: list[tuple[tuple[str | int, ...], str, int, bool]] = [
            (("compute", role, "vm_size"), size, count, False) for role, size, count in compute.service_vms()
        ]
        for i, p in enumerate(compute.partitions):
            out.append((("compute", "partitions", i, "vm_size"), p.vm_size, p.max_nodes, p.priority == "spot"))
        portal = self.loaded.config.portal
        if portal.enabled:  # the Open OnDemand VM: its size must exist in the region and fit the quota too
            out.append((("portal", "vm_size"), portal.vm_size, 1, False))
        return out

    def sku(self, name: str) -> dict[str, Any] | None:
        for s in self.skus or []:
            if s.get("resourceType") == "virtualMachines" and str(s.get("name", "")).lower() == name.lower():
                return s
        return None


def capability(sku: dict[str, Any], name: str) -> str | None:
    for c in sku.get("capabilities") or []:
        if c.get("name") == name:
            return str(c.get("value"))
    return None


class FactsReported(Rule[LiveContext]):
    """A rule whose every fact, in name order, is one finding at `path`; the subclass says which facts and how."""

    path: ClassVar[tuple[PathPart, ...]]

    @abstractmethod
    def facts(self, ctx: LiveContext) -> dict[str, str]:
        """The facts to report, each a name and what Azure said of it."""

    @abstractmethod
    def message(self, key: str, value: str) -> str:
        """The finding's message for one fact."""

    def fix_for(self, _key: str) -> str | None:
        return None  # the rule's own fix

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for key, value in sorted(self.facts(ctx).items()):
            yield self.finding(ctx, self.path, self.message(key, value), fix=self.fix_for(key))
