"""What a config rule sees: the typed config, where each value came from, and derived names."""

from __future__ import annotations

from dataclasses import dataclass, field

from hpclz.config.loader import LoadedConfig
from hpclz.config.root import LandingZoneConfig
from hpclz.config.source_map import SourceMap
from hpclz.naming import NameBuilder


@dataclass
class ConfigContext:
    loaded: LoadedConfig
    names: NameBuilder = field(init=False)

    def __post_init__(self) -> None:
        self.names = NameBuilder(self.loaded.config)

    @property
    def config(self) -> LandingZoneConfig:
        return self.loaded.config

    @property
    def source(self) -> SourceMap | None:
        return self.loaded.source
