"""Defender for Cloud: pricings at subscription scope, opt-in, and what plan and destroy say."""

from __future__ import annotations

from typing import Any

from hpclz.config import load_config
from hpclz.plan import policies
from hpclz.plan.changeset import Policy
from hpclz.render.build import build_plan
from hpclz.render.model import Scope
from tests.arm.test_schema_gate import schema_findings
from tests.conftest import REPO

PRICINGS = "Microsoft.Security/pricings"


def _defender(preset: str) -> list[Any]:
    plan = build_plan(load_config(REPO / "configs" / f"{preset}.yaml").config)
    return [d for d in plan.deployments if d.component == "defender"]


def test_finance_turns_on_the_four_plans_at_subscription_scope() -> None:
    (deployment,) = _defender("finance")
    assert deployment.scope is Scope.SUBSCRIPTION and deployment.resource_group is None
    assert deployment.depends_on == ["hpclz-riskgrid-prod-organization"]
    body = {r["name"]: r["properties"] for r in deployment.template["resources"] if r["type"] == PRICINGS}
    assert set(body) == {"VirtualMachines", "StorageAccounts", "KeyVaults", "Arm"}
    assert all(p["pricingTier"] == "Standard" and p["enforce"] == "False" for p in body.values())
    # Sub-plan names as Azure reports them: Get-AzSecurityPricing's documented output lists
    # "VirtualMachines Standard P2" (learn.microsoft.com/powershell/module/az.security/get-azsecuritypricing).
    assert body["VirtualMachines"]["subPlan"] == "P2"
    assert body["StorageAccounts"]["subPlan"] == "DefenderForStorageV2"
    assert "subPlan" not in body["KeyVaults"] and "subPlan" not in body["Arm"]


def test_defender_is_opt_in() -> None:
    assert _defender("energy") == [] and _defender("manufacturing") == []


def _template(*resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://schema.management.azure.com/schemas/2018-05-01/subscriptionDeploymentTemplate.json#",
        "contentVersion": "1.0.0.0",
        "resources": list(resources),
    }


def test_documented_pricing_bodies_pass_the_pinned_schema_and_a_wrong_tier_does_not() -> None:
    # The body of learn.microsoft.com/cli/azure/security/pricing's example `az security pricing create -n
    # VirtualMachines --tier standard --subplan P2 --extensions name=AgentlessVmScanning isEnabled=True`.
    documented = {
        "type": PRICINGS,
        "apiVersion": "2024-01-01",
        "name": "VirtualMachines",
        "properties": {
            "pricingTier": "Standard",
            "subPlan": "P2",
            "extensions": [{"name": "AgentlessVmScanning", "isEnabled": "True"}],
        },
    }
    assert schema_findings(_template(documented), scope="subscription") == []
    # "Microsoft Defender for Cloud is provided in two pricing tiers: free and standard" (PricingProperties).
    wrong = {**documented, "properties": {"pricingTier": "Premium"}}
    (finding,) = schema_findings(_template(wrong), scope="subscription")
    assert finding.rule_id == "HPCLZ-TPL-001" and "Premium" in finding.message


def test_plan_says_a_pricing_changes_the_whole_subscription() -> None:
    created = policies.create_verdict(PRICINGS)
    assert "WHOLE subscription" in created.reason and "destroy leaves it on" in created.action_needed
    modified = policies.property_verdict(PRICINGS, "properties.subPlan", "P1", "P2", False)
    assert "WHOLE subscription" in modified.reason
    deleted = policies.delete_verdict(PRICINGS, False)
    assert deleted.policy is Policy.IN_PLACE and "leaves it on" in deleted.reason
    assert "--tier free" in deleted.action_needed
    assert "WHOLE" not in policies.create_verdict("Microsoft.Network/virtualNetworks").reason
