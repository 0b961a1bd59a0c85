"""Live check for VNet flow logs: the region's Network Watcher the flow log goes under must exist.

Azure enables Network Watcher, NetworkWatcher_<region> in NetworkWatcherRG, when a subscription's first VNet in a
region is created, unless the subscription opted out of automatic enablement; a subscription holds at most one
watcher per region, so hpclz never creates one (learn.microsoft.com/azure/network-watcher/network-watcher-create).
"""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.loader import LoadedConfig
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext

DEFAULT_GROUP = "NetworkWatcherRG"
WATCHER = ("network", "flow_logs", "network_watcher")


def watcher_id(loaded: LoadedConfig, subscription_id: str, location: str) -> str:
    settings = loaded.config.network.flow_logs.network_watcher
    name = settings.name or f"NetworkWatcher_{location}"
    return (
        f"/subscriptions/{subscription_id}/resourceGroups/{settings.resource_group}"
        f"/providers/Microsoft.Network/networkWatchers/{name}"
    )


def _azure_makes_it(loaded: LoadedConfig) -> bool:
    """Whether the config names the watcher Azure enables by itself (the default name in NetworkWatcherRG)."""
    settings = loaded.config.network.flow_logs.network_watcher
    return settings.name is None and settings.resource_group.lower() == DEFAULT_GROUP.lower()


class NetworkWatcherMissing(Rule[LiveContext]):
    """The flow log is a child of the region's Network Watcher; without it ARM refuses the flow log
    (ParentResourceNotFound) after everything before it was deployed. Where the zone's VNet already exists and the
    watcher does not, Azure did not enable it (the subscription opted out, or someone deleted it): that is an error
    preflight can name with its fix. On a first deploy Azure enables it with the VNet, which is only said."""

    id = "HPCLZ-NET-110"
    severity = Severity.ERROR
    title = "The Network Watcher for the VNet flow log does not exist"
    fix = (
        "Enable Network Watcher in the region: az network watcher configure --resource-group NetworkWatcherRG "
        "--locations <region> --enabled true (or name an existing watcher in network.flow_logs.network_watcher)."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if not ctx.loaded.config.network.flow_logs.enabled or ctx.network_watcher is None or ctx.network_watcher:
            return
        name = watcher_id(ctx.loaded, "-", ctx.location).rsplit("/", 1)[-1]
        if _azure_makes_it(ctx.loaded) and not ctx.vnet_exists:
            yield self.finding(
                ctx,
                WATCHER,
                f"{name} does not exist yet; Azure enables it with the zone's VNet unless this subscription opted out",
                severity=Severity.INFO,
            )
            return
        yield self.finding(ctx, WATCHER, f"{name} does not exist in {ctx.location}, so the flow log has no parent")
