"""The packaged catalog of Azure regions (regions.json): names users may write, and what each is called."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class Region:
    name: str
    display_name: str
    geography: str
    paired_region: str | None
    unconfirmed: tuple[str, ...] = ()


@dataclass(frozen=True)
class RegionCatalog:
    regions: dict[str, Region]
    retrieved: str

    def normalise(self, text: str) -> str:
        """`WestEurope`, `West Europe` and `west-europe` all mean `westeurope`, as the portal's display names do."""
        return re.sub(r"[\s_-]+", "", text).lower()

    def get(self, text: str) -> Region | None:
        return self.regions.get(self.normalise(text))

    def similar(self, text: str) -> list[str]:
        return difflib.get_close_matches(self.normalise(text), list(self.regions), n=2, cutoff=0.7)


@lru_cache(maxsize=1)
def load_regions() -> RegionCatalog:
    raw = json.loads(resources.files("hpclz.catalog").joinpath("regions.json").read_text(encoding="utf-8"))
    regions = {
        name: Region(
            name=name,
            display_name=facts["display_name"],
            geography=facts["geography"],
            paired_region=facts["paired_region"],
            unconfirmed=tuple(facts.get("unconfirmed", ())),
        )
        for name, facts in raw["regions"].items()
    }
    return RegionCatalog(regions=regions, retrieved=raw["_retrieved"])
