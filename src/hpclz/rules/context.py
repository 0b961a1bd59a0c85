"""What a config rule sees: the typed config, where each value came from, derived names and the catalog."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from hpclz.catalog import Catalog, Sku, load_catalog, load_regions
from hpclz.config.compute import Partition
from hpclz.config.loader import LoadedConfig
from hpclz.config.network import SUBNET_ROLES, Subnet
from hpclz.config.root import LandingZoneConfig
from hpclz.config.source_map import SourceMap
from hpclz.naming import NameBuilder


@dataclass
class ConfigContext:
    loaded: LoadedConfig
    names: NameBuilder = field(init=False)
    catalog: Catalog = field(init=False)

    def __post_init__(self) -> None:
        self.names = NameBuilder(self.loaded.config, region=_meant_region(self.loaded.config.metadata.location))
        self.catalog = load_catalog()

    @property
    def config(self) -> LandingZoneConfig:
        return self.loaded.config

    @property
    def source(self) -> SourceMap | None:
        return self.loaded.source

    @property
    def is_prod(self) -> bool:
        return self.config.metadata.environment.value == "prod"

    @property
    def has_checkpoint_container(self) -> bool:
        blob = self.config.storage.blob
        return blob.mode != "disabled" and any(c.purpose == "checkpoints" for c in blob.containers)

    def subnets(self) -> Iterator[tuple[str, Subnet]]:
        """Each declared subnet with its role, in a stable order."""
        declared = self.config.network.vnet.subnets
        for role in SUBNET_ROLES:
            subnet = getattr(declared, role)
            if subnet is not None:
                yield role, subnet

    def partitions(self) -> Iterator[tuple[int, Partition, Sku | None]]:
        for index, partition in enumerate(self.config.compute.partitions):
            yield index, partition, self.catalog.sku(partition.vm_size)


def _meant_region(location: str) -> str:
    """A misspelt region is reported once (HPCLZ-ORG-005, did you mean ...); the name rules check the names of
    the region it most likely meant, so the typo does not reappear as name-length errors on every resource."""
    regions = load_regions()
    if regions.get(location) is not None:
        return location
    close = regions.similar(location)
    return close[0] if close else location
