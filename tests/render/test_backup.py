"""Azure Backup as render writes it: the vault with soft delete on, the daily VM policy with the
config's retention, and the CycleCloud server as protected item under Azure Backup's own container naming."""

from __future__ import annotations

import json
from typing import Any

from hpclz.config import load_config, load_config_text
from hpclz.plan.changeset import Policy
from hpclz.plan.config_diff import config_changes, config_snapshot
from hpclz.render.model import Deployment, DeploymentPlan
from tests.arm.test_schema_gate import schema_findings
from tests.conftest import REPO
from tests.render.conftest import preset_plan, variant

VAULT = "Microsoft.RecoveryServices/vaults"
POLICY = "Microsoft.RecoveryServices/vaults/backupPolicies"
ITEM = "Microsoft.RecoveryServices/vaults/backupFabrics/protectionContainers/protectedItems"


def _backup(plan: DeploymentPlan) -> Deployment | None:
    found = [d for d in plan.deployments if d.component == "backup"]
    return found[0] if found else None


def _of(deployment: Deployment, type_: str) -> dict[str, Any]:
    resource: dict[str, Any]
    [resource] = [r for r in deployment.template["resources"] if r["type"] == type_]
    return resource


def test_finance_backs_up_the_cyclecloud_server_daily_with_soft_delete() -> None:
    deployment = _backup(preset_plan("finance"))
    assert deployment is not None and deployment.resource_group == "rg-riskgrid-management-prod-weu"
    assert deployment.depends_on == ["hpclz-riskgrid-prod-organization", "hpclz-riskgrid-prod-compute"]
    vault = _of(deployment, VAULT)
    soft = vault["properties"]["securitySettings"]["softDeleteSettings"]
    assert soft == {
        "softDeleteState": "Enabled",
        "softDeleteRetentionPeriodInDays": 14,
        "enhancedSecurityState": "Enabled",
    }
    assert vault["properties"]["redundancySettings"]["standardTierStorageRedundancy"] == "ZoneRedundant"
    policy = _of(deployment, POLICY)["properties"]
    assert policy["backupManagementType"] == "AzureIaasVM" and policy["instantRpRetentionRangeInDays"] == 2
    assert policy["schedulePolicy"]["scheduleRunTimes"] == ["2026-01-01T01:00:00Z"]
    retention = policy["retentionPolicy"]
    assert retention["dailySchedule"]["retentionDuration"] == {"count": 35, "durationType": "Days"}
    assert retention["weeklySchedule"]["retentionDuration"] == {"count": 52, "durationType": "Weeks"}
    item = _of(deployment, ITEM)
    # Azure Backup's names for an Azure VM (azure-rest-api-specs RecoveryServicesBackup ProtectedItems_Get example:
    # container "iaasvmcontainer;iaasvmcontainerv2;<group>;<vm>", item "vm;iaasvmcontainerv2;<group>;<vm>").
    assert item["name"] == (
        "rsv-riskgrid-prod-weu/Azure/iaasvmcontainer;iaasvmcontainerv2;rg-riskgrid-compute-prod-weu;"
        "vm-riskgrid-cc-prod-weu/vm;iaasvmcontainerv2;rg-riskgrid-compute-prod-weu;vm-riskgrid-cc-prod-weu"
    )
    assert item["properties"]["protectedItemType"] == "Microsoft.Compute/virtualMachines"
    assert item["properties"]["sourceResourceId"].endswith("'vm-riskgrid-cc-prod-weu')]")
    # Kept on a plain destroy: every backup resource carries the data tag.
    assert all(r["tags"]["hpclz-data"] == "true" for r in deployment.template["resources"])


def test_backup_is_opt_in_and_weekly_points_can_be_off() -> None:
    assert _backup(preset_plan("energy")) is None and _backup(preset_plan("manufacturing")) is None

    def edit(doc: dict[str, Any]) -> None:
        doc["backup"] = {"enabled": True, "weekly_retention_weeks": 0, "time_utc": "23:30"}

    deployment = _backup(variant("manufacturing", edit))
    assert deployment is not None
    policy = _of(deployment, POLICY)["properties"]
    assert "weeklySchedule" not in policy["retentionPolicy"]
    assert policy["schedulePolicy"]["scheduleRunTimes"] == ["2026-01-01T23:30:00Z"]


def test_the_backup_template_passes_the_official_schemas() -> None:
    deployment = _backup(preset_plan("ai-training"))
    assert deployment is not None
    assert schema_findings(deployment.template) == []


def test_changing_the_vault_redundancy_is_refused_by_plan() -> None:
    before = config_snapshot(load_config(REPO / "configs" / "finance.yaml").config)

    def edit(doc: dict[str, Any]) -> None:
        doc["backup"]["storage_redundancy"] = "GeoRedundant"

    after = load_config_text(json.dumps(_edited("finance", edit)), "finance.yaml").config
    [change] = [c for c in config_changes(before, after) if c.path == "backup.storage_redundancy"]
    assert change.verdict.policy is Policy.NOT_ALLOWED


def _edited(stem: str, edit: Any) -> dict[str, Any]:
    from ruamel.yaml import YAML

    doc: dict[str, Any] = YAML(typ="safe").load((REPO / "configs" / f"{stem}.yaml").read_text(encoding="utf-8"))
    edit(doc)
    return doc
