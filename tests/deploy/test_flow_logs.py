"""VNet flow logs (issue 18 item 4) on the stand-in: the flow log goes under the Network Watcher Azure enables with
the first VNet of a region, and preflight says when that watcher is missing (HPCLZ-NET-110)."""

from __future__ import annotations

from pathlib import Path

from hpclz.config.loader import load_config
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.flowlogs import NetworkWatcherMissing
from tests.conftest import REPO
from tests.deploy.conftest import destroy_everything, state_of
from tests.support.arm_standin import ArmStandIn

FLOW_LOG = "Microsoft.Network/networkWatchers/flowLogs"


def _ctx(watcher: dict | None, vnet_exists: bool) -> LiveContext:
    loaded = load_config(REPO / "configs" / "ai-training.yaml")
    return LiveContext(loaded=loaded, location="eastus2", network_watcher=watcher, vnet_exists=vnet_exists)


def test_a_present_watcher_or_an_unread_one_says_nothing() -> None:
    assert list(NetworkWatcherMissing().check(_ctx({"name": "NetworkWatcher_eastus2"}, True))) == []
    assert list(NetworkWatcherMissing().check(_ctx(None, True))) == []


def test_on_a_first_deploy_the_missing_watcher_is_only_information() -> None:
    [finding] = NetworkWatcherMissing().check(_ctx({}, False))
    assert finding.severity.value == "info" and "enables it with the zone's VNet" in finding.message
    assert finding.path == "network.flow_logs.network_watcher"


def test_with_the_vnet_already_there_a_missing_watcher_is_an_error_with_the_command() -> None:
    [finding] = NetworkWatcherMissing().check(_ctx({}, True))
    assert finding.severity.value == "error"
    assert "NetworkWatcher_eastus2 does not exist in eastus2" in finding.message
    assert "az network watcher configure --resource-group NetworkWatcherRG" in finding.fix


def test_deploy_puts_the_flow_log_under_azures_watcher_and_destroy_deletes_only_the_flow_log(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    [flow_log] = [r for r in arm.world.resources.values() if r["type"] == FLOW_LOG]
    assert flow_log["id"].split("/")[4] == "NetworkWatcherRG"
    props = flow_log["properties"]
    assert props["targetResourceId"].endswith("/virtualNetworks/vnet-aitrain-prod-eus2")
    assert props["retentionPolicy"] == {"days": 90, "enabled": True}
    analytics = props["flowAnalyticsConfiguration"]["networkWatcherFlowAnalyticsConfiguration"]
    assert analytics["enabled"] is True and analytics["trafficAnalyticsInterval"] == 10
    assert analytics["workspaceResourceId"].endswith("/workspaces/log-aitrain-prod-eus2")
    assert any(r["type"] == FLOW_LOG for r in state_of(zone)["resources"])

    gone = destroy_everything(run_cli, arm, zone)
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert not any(r["type"] == FLOW_LOG for r in arm.world.resources.values())
    assert any(r["type"] == "Microsoft.Network/networkWatchers" for r in arm.world.resources.values())


def test_without_automatic_network_watcher_the_rerun_stops_in_preflight(arm: ArmStandIn, zone: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    arm.world.auto_network_watcher = False  # a subscription that opted out of automatic enablement
    first = run_cli("deploy", str(zone), "--yes")
    assert first.exit_code != 0
    # Without a watcher there is no NetworkWatcherRG either: ARM refuses the nested flow-log deployment.
    assert "ResourceGroupNotFound: Resource group 'NetworkWatcherRG' could not be found" in first.stdout
    writes = len([r for r in arm.log if r.method == "PUT"])
    again = run_cli("deploy", str(zone), "--yes")
    assert again.exit_code == 1, again.stdout + again.stderr
    assert "HPCLZ-NET-110" in again.stdout and "NetworkWatcher_eastus2 does not exist" in again.stdout
    assert len([r for r in arm.log if r.method == "PUT"]) == writes


def test_a_flow_log_without_its_watcher_is_refused_as_arm_refuses_a_nested_resource(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    arm.world.auto_network_watcher = False
    arm.world.put_group("NetworkWatcherRG", "eastus2", {})  # the group is there, its watcher was deleted
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 5
    assert "ParentResourceNotFound" in result.stdout and "Parent resource 'NetworkWatcher_eastus2' not found" in (
        result.stdout
    )
