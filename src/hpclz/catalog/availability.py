"""The packaged per-region availability of catalog VM sizes (availability.json): only what a published capture shows.

A size with no fact for a region is unknown offline, never "not offered": the captures leave out sizes
restricted for the subscription that took them (see the file's `_about`). The live check is HPCLZ-CMP-101.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Offer:
    size: str
    region: str
    zones: tuple[str, ...] | None  # None: no source states the zones
    sources: tuple[str, ...]


@dataclass(frozen=True)
class AvailabilityCatalog:
    offers: dict[str, dict[str, Offer]]  # lower-cased size -> region -> offer
    sources: dict[str, dict[str, str]]
    retrieved: str

    def offer(self, size: str, region: str) -> Offer | None:
        return self.offers.get(size.lower(), {}).get(region.lower())

    def regions_offering(self, size: str) -> list[str]:
        return sorted(self.offers.get(size.lower(), {}))

    def zones(self, size: str, region: str) -> tuple[str, ...] | None:
        """The zones a capture shows the size offered in there; None where no source says."""
        offer = self.offer(size, region)
        return None if offer is None else offer.zones


def _offer(size: str, region: str, by_source: dict[str, dict[str, Any]], sources: dict[str, dict[str, str]]) -> Offer:
    # Where captures disagree on zones, the most recent one is the better guess of today's zones.
    zoned = sorted((sources[sid]["captured"], sid) for sid, fact in by_source.items() if "zones" in fact)
    zones = tuple(by_source[zoned[-1][1]]["zones"]) if zoned else None
    return Offer(size=size, region=region, zones=zones, sources=tuple(sorted(by_source)))


@lru_cache(maxsize=1)
def load_availability() -> AvailabilityCatalog:
    raw = json.loads(resources.files("hpclz.catalog").joinpath("availability.json").read_text(encoding="utf-8"))
    sources: dict[str, dict[str, str]] = raw["_sources"]
    offers = {
        size.lower(): {region: _offer(size, region, by_source, sources) for region, by_source in regions.items()}
        for size, regions in raw["offered"].items()
    }
    return AvailabilityCatalog(offers=offers, sources=sources, retrieved=raw["_retrieved"])
