"""VNet flow logs: Network Watcher records every IP flow through the landing zone's VNet.

NSG flow logs are retired for new creation: "Starting June 30, 2025, you can no longer create new NSG flow logs"
(learn.microsoft.com/azure/network-watcher/nsg-flow-logs-overview, retirement notice); VNet flow logs replace them
and record the whole VNet, including traffic no NSG sees (learn.microsoft.com/azure/network-watcher/
vnet-flow-logs-overview).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hpclz.config.base import StrictModel
from hpclz.config.constraints import Integer


class NetworkWatcher(StrictModel):
    """The region's Network Watcher, which owns the flow log. Azure creates one per region and subscription, named
    NetworkWatcher_<region> in the resource group NetworkWatcherRG, when a VNet is first created there
    (learn.microsoft.com/azure/network-watcher/network-watcher-create); a subscription holds at most one per region,
    so hpclz uses the existing one and never creates another."""

    # Lengths as max_length, not as a bounded repetition in the pattern: pydantic-core compiles patterns with the
    # Rust regex crate, which expands `[-\w._]{1,80}` over Unicode's \w into one automaton state per repetition,
    # about 55-70 ms each on the 2-core development machine (benchmarks/README.md, cli_startup.py) on every
    # command that reads a config; `+` with max_length accepts exactly the same strings in about 1-2 ms.
    resource_group: str = Field(default="NetworkWatcherRG", pattern=r"^[-\w._()]+$", max_length=90)
    name: str | None = Field(
        default=None,
        pattern=r"^[-\w._]+$",
        max_length=80,
        description="Default NetworkWatcher_<location>, as Azure names it.",
    )


class FlowLogs(StrictModel):
    enabled: bool = Field(default=False, description="VNet flow logs to a storage account, with Traffic Analytics.")
    retention_days: Integer = Field(
        default=90, ge=1, le=365, description="Days the raw flow records stay in the storage account (1-365)."
    )
    traffic_analytics: bool = Field(
        default=True, description="Process the records into the zone's Log Analytics workspace (Traffic Analytics)."
    )
    traffic_analytics_interval_minutes: Literal[10, 60] = 60
    network_watcher: NetworkWatcher = Field(default_factory=NetworkWatcher)
