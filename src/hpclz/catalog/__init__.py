"""Offline facts (VM sizes, service limits) that rules check configs against, with their sources."""

from hpclz.catalog.skus import Catalog, InfiniBand, Sku, load_catalog

__all__ = ["Catalog", "InfiniBand", "Sku", "load_catalog"]
