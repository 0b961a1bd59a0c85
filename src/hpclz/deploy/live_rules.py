"""Live preflight rules: facts only Azure knows (provider registration, ARM validation, SKUs, quota).

They run in `hpclz deploy` when credentials are available, never in the offline `hpclz validate`.
The adapter gathers the facts into a LiveContext; the rules only compare them with the config.
The rules live beside their area (live_subscription, live_compute, live_network, live_names, live_images) and the
facts they read in live_context; this module keeps the names importable from where callers always found them.
"""

from __future__ import annotations

from typing import Any

from hpclz.deploy.live_compute import QuotaShort, SkuNotOffered, SkuRestricted, ZoneNotOfferedLive
from hpclz.deploy.live_context import LiveContext, capability
from hpclz.deploy.live_existing import ExistingLustreMatches, ExistingVaultUnfit
from hpclz.deploy.live_flowlogs import NetworkWatcherMissing
from hpclz.deploy.live_images import CustomImageFitsNodes, CustomImageUsable, gallery_definition, image_regions
from hpclz.deploy.live_marketplace import MarketplaceImageUnavailable
from hpclz.deploy.live_names import GlobalNameTaken, SoftDeletedVaultHoldsName
from hpclz.deploy.live_netapp import ExistingNetAppVolumes
from hpclz.deploy.live_network import VNET, ExistingVnetMatches, HubHasNoGateway, SpokePeeringNotConnected
from hpclz.deploy.live_nsg import ExistingSubnetWithoutNsg, NsgBlocksLustre
from hpclz.deploy.live_subscription import (
    ArmValidationFailed,
    FeatureNotRegistered,
    LiveFactsUnavailable,
    ProviderNotRegistered,
)
from hpclz.rules.base import Rule

__all__ = [
    "LIVE_RULES",
    "VNET",
    "ArmValidationFailed",
    "CustomImageFitsNodes",
    "CustomImageUsable",
    "ExistingLustreMatches",
    "ExistingNetAppVolumes",
    "ExistingSubnetWithoutNsg",
    "ExistingVaultUnfit",
    "ExistingVnetMatches",
    "FeatureNotRegistered",
    "GlobalNameTaken",
    "HubHasNoGateway",
    "LiveContext",
    "LiveFactsUnavailable",
    "MarketplaceImageUnavailable",
    "NetworkWatcherMissing",
    "NsgBlocksLustre",
    "ProviderNotRegistered",
    "QuotaShort",
    "SkuNotOffered",
    "SkuRestricted",
    "SoftDeletedVaultHoldsName",
    "SpokePeeringNotConnected",
    "ZoneNotOfferedLive",
    "capability",
    "gallery_definition",
    "image_regions",
]

LIVE_RULES: tuple[type[Rule[Any]], ...] = (
    ProviderNotRegistered,
    ArmValidationFailed,
    SkuNotOffered,
    SkuRestricted,
    QuotaShort,
    FeatureNotRegistered,
    ExistingVnetMatches,
    ExistingSubnetWithoutNsg,
    NsgBlocksLustre,
    HubHasNoGateway,
    SpokePeeringNotConnected,
    ExistingLustreMatches,
    ExistingNetAppVolumes,
    ExistingVaultUnfit,
    GlobalNameTaken,
    SoftDeletedVaultHoldsName,
    LiveFactsUnavailable,
    CustomImageUsable,
    CustomImageFitsNodes,
    MarketplaceImageUnavailable,
    ZoneNotOfferedLive,
    NetworkWatcherMissing,
)
