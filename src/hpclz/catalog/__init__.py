"""Offline facts (VM sizes, service limits) that rules check configs against, with their sources."""

from hpclz.catalog.regions import Region, RegionCatalog, load_regions
from hpclz.catalog.skus import Catalog, InfiniBand, Sku, load_catalog

__all__ = ["Catalog", "InfiniBand", "Region", "RegionCatalog", "Sku", "load_catalog", "load_regions"]
