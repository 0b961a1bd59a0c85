"""vCPUs each regional quota family needs when every node of the landing zone runs, against the declared quota.

Azure counts VM cores per VM family and region, and spot VMs against one regional low-priority quota
(learn.microsoft.com/azure/virtual-machines/spot-vms, "Quota": spot VMs have their own quota separate from
pay-as-you-go); an allocation beyond a quota fails (learn.microsoft.com/azure/quotas/per-vm-quota-requests).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from hpclz.catalog.skus import Catalog
from hpclz.config.root import LandingZoneConfig


class QuotaNeed(BaseModel):
    family: str = Field(description="Quota family as Azure names it (az vm list-usage), e.g. standardNDSH100v5Family.")
    vcpus: int = Field(description="vCPUs needed with every partition at max_nodes and every service VM running.")
    users: list[str] = Field(description="What needs them: `gpu 4x96`, `scheduler 1x8`.")
    declared: int | None = Field(default=None, description="compute.quotas for the family; None: not declared.")
    limit: int | None = Field(default=None, description="The live vCPU limit (usage API); None: not read.")
    in_use: int | None = Field(default=None, description="vCPUs in use now (usage API); None: not read.")

    @property
    def left(self) -> int | None:
        """vCPUs free now, as Azure counts them; None when not read."""
        return None if self.limit is None or self.in_use is None else self.limit - self.in_use

    @property
    def short(self) -> bool:
        """Against the live quota where it was read, else against the declared one."""
        if self.left is not None:
            return self.vcpus > self.left
        return self.declared is not None and self.vcpus > self.declared


def quota_needs(config: LandingZoneConfig, catalog: Catalog) -> list[QuotaNeed]:
    """Per family, sorted by name; sizes the catalog does not know are left out (validate reports them)."""
    totals: dict[str, QuotaNeed] = {}

    def add(family: str, vcpus: int, what: str) -> None:
        need = totals.setdefault(family, QuotaNeed(family=family, vcpus=0, users=[]))
        need.vcpus += vcpus
        need.users.append(what)

    for partition in config.compute.partitions:
        sku = catalog.sku(partition.vm_size)
        if sku is not None:
            family = catalog.spot_quota_family if partition.priority == "spot" else sku.quota_family
            add(family, sku.vcpus * partition.max_nodes, f"{partition.name} {partition.max_nodes}x{sku.vcpus}")
    for role, size, count in config.compute.service_vms():
        sku = catalog.sku(size)
        if sku is not None and count:
            add(sku.quota_family, sku.vcpus * count, f"{role} {count}x{sku.vcpus}")
    declared = {k.lower(): v for k, v in config.compute.quotas.items()}
    for need in totals.values():
        need.declared = declared.get(need.family.lower())
    return [totals[f] for f in sorted(totals)]
