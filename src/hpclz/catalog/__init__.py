"""Offline facts (VM sizes, their regions and zones, service limits) that rules check configs against, with their sources."""

from hpclz.catalog.availability import AvailabilityCatalog, Offer, load_availability
from hpclz.catalog.regions import Region, RegionCatalog, load_regions
from hpclz.catalog.skus import Catalog, InfiniBand, Sku, load_catalog

__all__ = [
    "AvailabilityCatalog",
    "Catalog",
    "InfiniBand",
    "Offer",
    "Region",
    "RegionCatalog",
    "Sku",
    "load_availability",
    "load_catalog",
    "load_regions",
]
