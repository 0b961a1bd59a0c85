"""Live preflight rules (facts only Azure knows: provider registration, ARM validation, SKUs, quota, existing
resources, global names). LIVE_RULES lists every one, in order.

They run in `hpclz deploy` when credentials are available, never in the offline `hpclz validate`. The rules only
compare facts with the config: hpclz.deploy.live_reads gathers the facts through the Azure adapter into a
LiveContext (hpclz.rules.live.context), so no module here imports hpclz.azure and the family sits in the rules
layer with the config and template rules.
"""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule
from hpclz.rules.live.compute import QuotaShort, SkuNotOffered, SkuRestricted, ZoneNotOfferedLive
from hpclz.rules.live.existing import ExistingLustreMatches, ExistingVaultUnfit
from hpclz.rules.live.flowlogs import NetworkWatcherMissing
from hpclz.rules.live.images import CustomImageFitsNodes, CustomImageUsable
from hpclz.rules.live.marketplace import MarketplaceImageUnavailable, MarketplaceTermsNotAccepted
from hpclz.rules.live.names import GlobalNameTaken, SoftDeletedVaultHoldsName
from hpclz.rules.live.netapp import ExistingNetAppVolumes
from hpclz.rules.live.network import ExistingVnetMatches, HubHasNoGateway, SpokePeeringNotConnected
from hpclz.rules.live.nsg import ExistingSubnetWithoutNsg, NsgBlocksLustre
from hpclz.rules.live.subscription import (
    ArmValidationFailed,
    FeatureNotRegistered,
    LiveFactsUnavailable,
    ProviderNotRegistered,
)

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
    MarketplaceTermsNotAccepted,
    ZoneNotOfferedLive,
    NetworkWatcherMissing,
)
