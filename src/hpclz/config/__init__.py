"""The typed landing-zone config and its loader."""

from hpclz.config.loader import LoadedConfig, load_config, load_config_text
from hpclz.config.root import LandingZoneConfig

__all__ = ["LandingZoneConfig", "LoadedConfig", "load_config", "load_config_text"]
