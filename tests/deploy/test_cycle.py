"""deploy -> state -> redeploy is a no-op -> destroy keeps data -> destroy --include-data leaves nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import azure_made, destroy_everything, left_after_destroy, state_of
from tests.support.arm_standin import ArmStandIn


def test_deploy_writes_state_and_shows_next_steps(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    steps = result.stdout.split("Next steps", 1)[1]
    server = next(r["id"] for r in arm.world.resources.values() if r["type"] == "Microsoft.Compute/virtualMachines")
    bastion = (
        f"--name bas-aitrain-prod-eus2 --resource-group rg-aitrain-network-prod-eus2 --target-resource-id {server}"
    )
    # Commands as az network bastion documents them (learn.microsoft.com/cli/azure/network/bastion) and as
    # Azure/cyclecloud-slurm-workspace util/tunnel_thru_bastion.sh and ssh_thru_bastion.sh run them. The tunnel goes to
    # port 22 only ("The bastion tunnel doesn't relay web servers or hosts.": MicrosoftDocs/azure-docs@b8db86a
    # includes/bastion-native-connect-tunnel.md l.11); ssh forwards the UI's 443.
    flat = " ".join(steps.split())
    assert f"az network bastion tunnel {bastion} --resource-port 22 --port 8822" in flat
    assert "ssh -N -p 8822 -L 8443:localhost:443 -i <your private key> hpcadmin@127.0.0.1" in flat
    assert "--resource-port 443" not in flat
    assert "https://localhost:8443/home" in steps
    # The app registration's SPA redirect URIs are the page the forward opens, /home and /sso
    # (MicrosoftDocs/azure-docs@03e5750:articles/cyclecloud/how-to/create-app-registration.md, "Configuring redirect URIs").
    # ai-training's users arrive from its hub and open the server's private address; the stand-in allocates no dynamic
    # private IP, so the server's name stands in for it (next_steps.ui_hosts).
    users = "https://vm-aitrain-cc-prod-eus2"
    assert f"redirect URIs: https://localhost:8443/home https://localhost:8443/sso {users}/home {users}/sso (" in flat
    assert f"sign in at {users}/home from a machine that reaches the VNet" in flat
    assert f"az network bastion ssh {bastion} --auth-type ssh-key --username hpcadmin" in steps
    # identity.groups sign in with Entra ID (MicrosoftDocs/azure-docs:articles/bastion/connect-vm-native-client-linux.md).
    assert f"with your Entra ID account: az network bastion ssh {bastion} --auth-type AAD" in steps
    assert "cyclecloud connect login-1 -c aitrain-prod" in steps
    assert "cyclecloud connect scheduler -c aitrain-prod" in steps and f"hpclz verify {zone.name}" in steps
    # Dashboards go in with the command CCWS's monitoring uses (Azure/cyclecloud-monitoring infra/add_dashboards.sh).
    assert (
        "az grafana dashboard import --name amg-aitrain-prod-eus2 --resource-group rg-aitrain-monitoring-prod-eus2"
        in steps
    )
    # Monitoring that collects reached ARM: the agent's association, managed Prometheus, Grafana, alert rules.
    deployed = {r["type"] for r in arm.world.resources.values()}
    assert {
        "Microsoft.Insights/dataCollectionRuleAssociations",
        "Microsoft.Monitor/accounts",
        "Microsoft.Insights/dataCollectionEndpoints",
        "Microsoft.Dashboard/grafana",
        "Microsoft.AlertsManagement/prometheusRuleGroups",
    } <= deployed
    state = state_of(zone)
    assert all(d["status"] == "succeeded" for d in state["deployments"].values())
    # ARM's deployment history also holds the runs the templates nest (flow log, audit, CycleCloud's roles), each a
    # deployment of its own that an outer run names as a target (hpclz.deploy.nested); state records the zone's own.
    nested = {
        str(o["properties"]["targetResource"]["resourceName"]).lower()
        for run in arm.world.deployments.values()
        for o in run.operations
        if o["properties"]["targetResource"]["resourceType"] == "Microsoft.Resources/deployments"
    }
    assert "aitrain-flowlog" in nested
    assert {d["name"].lower() for d in state["deployments"].values()} == {
        k.split("|")[1] for k in arm.world.deployments
    } - nested
    ids = {r["id"].lower() for r in state["resources"]}
    made = set(arm.world.resources) | {g["id"].lower() for g in arm.world.groups.values()}
    assert ids == made - azure_made(arm)
    # network.flow_logs: the flow log sits under the Network Watcher Azure enabled with the VNet, in NetworkWatcherRG.
    assert any("/networkwatcherrg/" in i and i.endswith("/flowlogs/vnet-aitrain-prod-eus2-flowlog") for i in ids)
    data = {r["type"] for r in state["resources"] if r["data_bearing"]}
    assert "Microsoft.StorageCache/amlFilesystems" in data
    # organization.policies: Allowed locations and one Require-a-tag assignment per required tag, in each group.
    policies = [r for r in arm.world.resources.values() if r["type"] == "Microsoft.Authorization/policyAssignments"]
    assert len(policies) == 5 * 3
    ours = {g["name"] for g in arm.world.groups.values() if g["id"].lower() not in azure_made(arm)}
    assert {r["id"].split("/")[4] for r in policies} == ours
    assert all(r["api_version"] for r in state["resources"])


def test_second_deploy_makes_no_write_calls(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    before = len(arm.log)
    again = run_cli("deploy", str(zone), "--yes")
    assert again.exit_code == 0, again.stderr
    assert [r for r in arm.log[before:] if r.method in ("PUT", "POST", "DELETE", "PATCH")] == []
    assert len(arm.log) > before  # it did ask ARM (access, providers, SKUs), it only wrote nothing
    assert "skipped" in again.stderr


def test_destroy_keeps_data_then_include_data_removes_everything(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    kept = run_cli("destroy", str(zone), "--yes")
    assert kept.exit_code == 0, kept.stderr
    assert "left on Microsoft.Security/pricings VirtualMachines" in kept.stderr
    left_types = {r["type"] for r in arm.world.resources.values()}
    assert "Microsoft.StorageCache/amlFilesystems" in left_types
    assert "Microsoft.Storage/storageAccounts" in left_types
    # storage.shared: home directories and /sched are data, kept with their NFS shares.
    kinds = {r.get("kind") for r in arm.world.resources.values() if r["type"] == "Microsoft.Storage/storageAccounts"}
    assert "FileStorage" in kinds
    shares = [
        k
        for k, r in arm.world.resources.items()
        if r["type"] == "Microsoft.Storage/storageAccounts/fileServices/shares"
    ]
    assert sorted(k.rsplit("/", 1)[1] for k in shares) == ["home", "sched"]
    assert "Microsoft.ManagedIdentity/userAssignedIdentities" not in left_types
    assert "Microsoft.Network/bastionHosts" not in left_types
    assert "rg-aitrain-storage-prod-eus2" in arm.world.groups
    assert "rg-aitrain-compute-prod-eus2" not in arm.world.groups
    assert {r["id"].lower() for r in state_of(zone)["resources"]} >= set(
        k for k, r in arm.world.resources.items() if r["type"] == "Microsoft.StorageCache/amlFilesystems"
    )

    # backup: the first --include-data run stops protecting the CycleCloud server; Azure keeps its backups
    # soft-deleted and refuses the vault until they expire, and destroy says so (docs/backup.md).
    refused = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert refused.exit_code == 5
    assert "ServiceResourceNotEmptyWithContainerDetails" in refused.stdout
    assert "keeps the backups destroy deleted soft-deleted for 14 days" in refused.stdout
    # The confirmation says so before anything is deleted.
    assert "backups: destroy stops protection first; Recovery Services vault rsv-aitrain-prod-eus2" in refused.stderr
    assert not any("/protecteditems/" in k for k in arm.world.resources)
    arm.world.soft_deleted_backups.clear()  # 14 days later
    gone = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stderr
    # Only the subscription's Defender plans stay on: resetting them to Free would change the whole subscription.
    # The Network Watcher is Azure's, made with the VNet: destroy deleted the flow log under it, not the watcher.
    assert {r["type"] for r in arm.world.resources.values()} == {
        "Microsoft.Security/pricings",
        "Microsoft.Network/networkWatchers",
    }
    assert list(arm.world.groups) == ["networkwatcherrg"]
    assert state_of(zone)["resources"] == []


def test_destroy_leaves_what_hpclz_did_not_create(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    foreign = f"/subscriptions/{arm.subscription_id}/resourceGroups/rg-aitrain-compute-prod-eus2/providers/Microsoft.Compute/disks/mine"
    arm.world.resources[foreign.lower()] = {
        "id": foreign,
        "name": "mine",
        "type": "Microsoft.Compute/disks",
        "tags": {},
    }
    result = destroy_everything(run_cli, arm, zone)
    assert result.exit_code == 0, result.stderr
    assert "holds 1 resources hpclz did not create" in result.stderr
    # Besides the foreign disk, only the Defender plans (docs/defender.md) and Azure's Network Watcher stay.
    assert left_after_destroy(arm) == [foreign.lower()]


def test_destroy_without_yes_in_a_script_is_refused(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    result = run_cli("destroy", str(zone))
    assert result.exit_code == 64
    assert "--yes" in result.stderr
    assert arm.world.resources


def test_state_from_another_subscription_is_refused(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    other, original = "11111111-2222-3333-4444-555555555555", arm.subscription_id
    arm.world.subscription_id = other
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", other)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 64
    assert f"was deployed to subscription {original}" in result.stderr
    assert f"not {other}" in result.stderr
    assert [r for r in arm.log if r.method == "PUT" and other in r.path] == []


def test_deploy_without_yes_in_a_script_is_refused_before_any_write(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    result = run_cli("deploy", str(zone))
    assert result.exit_code == 64 and "pass --yes" in result.stderr
    assert [r for r in arm.log if r.method in ("PUT", "DELETE")] == []
