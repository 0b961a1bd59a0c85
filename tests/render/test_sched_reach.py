"""/sched on an Azure Files NFS share (finance): the munge key sits there without root squash, so only the cluster's
own subnets reach the share's private endpoint on NFS; the hub and on-premises (the VirtualNetwork tag) do not.
HPCLZ-TPL-055 judges the rendered plan as the lint gate does, with every deployment's template in view."""

from __future__ import annotations

from typing import Any

from hpclz.gates import check_plan
from hpclz.render.model import DeploymentPlan
from tests.render.conftest import preset_plan, resources_of, variant


def _pe_rules(plan: DeploymentPlan) -> dict[str, dict[str, Any]]:
    (nsg,) = [r for r in resources_of(plan, "Microsoft.Network/networkSecurityGroups") if "-pe-" in r["name"]]
    return {rule["name"]: rule["properties"] for rule in nsg["properties"]["securityRules"]}


def _tpl_055(plan: DeploymentPlan) -> list[str]:
    report = check_plan(plan, schema=False, checkov=False)
    return [f.message for r in report.results.values() for f in r.findings if f.rule_id == "HPCLZ-TPL-055"]


def test_finance_allows_nfs_only_from_its_own_subnets() -> None:
    plan = preset_plan("finance")
    rules = _pe_rules(plan)
    allow, deny = rules["AllowNfsFromCluster"], rules["DenyNfsFromElsewhere"]
    # admin (CycleCloud, scheduler, login, portal) and compute: finance's VM subnets; not the hub's 10.0.0.0/16.
    assert allow["sourceAddressPrefixes"] == ["10.60.0.0/24", "10.60.16.0/20"]
    assert (allow["access"], allow["protocol"], allow["destinationPortRange"]) == ("Allow", "Tcp", "2049")
    assert (deny["access"], deny["sourceAddressPrefix"], deny["destinationPortRange"]) == ("Deny", "*", "2049")
    assert allow["priority"] < deny["priority"] < 65000  # before the default AllowVnetInBound
    assert _tpl_055(plan) == []


def test_a_config_rule_that_lets_the_hub_mount_sched_is_refused() -> None:
    def hub_nfs(data: dict[str, Any]) -> None:
        data["network"]["nsg_rules"] = [
            {
                "name": "AllowHubNfs",
                "subnet": "private_endpoints",
                "priority": 300,
                "source_address_prefix": "10.0.0.0/16",
                "destination_port_range": "2049",
            }
        ]

    (message,) = _tpl_055(variant("finance", hub_nfs))
    assert "sched: munge.key's share, without root squash" in message
    assert "rule AllowHubNfs allows NFS from 10.0.0.0/16" in message


def test_every_preset_on_azure_files_passes_and_netapp_renders_no_nfs_rules() -> None:
    for stem in ("energy", "ai-training"):  # storage.shared mode azure_files, like finance
        plan = preset_plan(stem)
        assert {"AllowNfsFromCluster", "DenyNfsFromElsewhere"} <= set(_pe_rules(plan)), stem
        assert _tpl_055(plan) == [], stem
    names = {
        rule["name"]
        for nsg in resources_of(preset_plan("manufacturing"), "Microsoft.Network/networkSecurityGroups")
        for rule in nsg["properties"]["securityRules"]
    }
    assert not names & {"AllowNfsFromCluster", "DenyNfsFromElsewhere"}  # NetApp: no private endpoint, no NFS rules
