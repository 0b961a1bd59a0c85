"""Access and audit logs: what the audit deployment sends to the workspace, and its saved searches."""

from __future__ import annotations

from typing import Any

from hpclz.config import load_config
from hpclz.config.base import Disabled
from hpclz.plan import policies
from hpclz.plan.changeset import Policy
from hpclz.render.build import build_plan
from hpclz.render.model import Deployment, Scope
from tests.arm.test_schema_gate import schema_findings
from tests.conftest import REPO

DIAG = "Microsoft.Insights/diagnosticSettings"


def _audit(preset: str) -> list[Deployment]:
    plan = build_plan(load_config(REPO / "configs" / f"{preset}.yaml").config)
    return [d for d in plan.deployments if d.component == "audit"]


def _nested(deployment: Deployment) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in deployment.template["resources"] if r["type"] == "Microsoft.Resources/deployments"}


def _categories(setting: dict[str, Any]) -> list[str]:
    return [log["category"] for log in setting["properties"]["logs"] if log["enabled"]]


def test_finance_sends_activity_key_vault_and_blob_logs_to_its_workspace() -> None:
    (audit,) = _audit("finance")
    assert audit.scope is Scope.SUBSCRIPTION
    (activity,) = [r for r in audit.template["resources"] if r["type"] == DIAG]
    # Activity log categories as learn.microsoft.com/azure/azure-monitor/essentials/activity-log-schema lists them.
    assert {"Administrative", "Security", "Policy"} <= set(_categories(activity))
    workspace = activity["properties"]["workspaceId"]
    assert "Microsoft.OperationalInsights/workspaces" in workspace and "rg-riskgrid-monitoring" in workspace
    nested = _nested(audit)
    vault = nested["riskgrid-audit-keyvault"]["properties"]["template"]["resources"][0]
    assert vault["scope"].startswith("Microsoft.KeyVault/vaults/") and _categories(vault) == ["AuditEvent"]
    blob = nested["riskgrid-audit-blob"]["properties"]["template"]["resources"][0]
    assert blob["scope"].endswith("/blobServices/default")
    assert _categories(blob) == ["StorageRead", "StorageWrite", "StorageDelete"]
    assert vault["properties"]["workspaceId"] == blob["properties"]["workspaceId"] == workspace


def test_saved_searches_ask_who_read_the_checkpoints_and_who_signed_in() -> None:
    (audit,) = _audit("finance")
    queries = _nested(audit)["riskgrid-audit-queries"]["properties"]["template"]["resources"]
    by_name = {q["name"].rsplit("/", 1)[1]: q["properties"]["query"] for q in queries}
    reads = by_name["hpclz-checkpoint-reads"]
    # StorageBlobLogs columns (learn.microsoft.com/azure/azure-monitor/reference/tables/storagebloblogs).
    assert reads.startswith("StorageBlobLogs") and "OperationName == 'GetBlob'" in reads
    assert "Container in ('checkpoints')" in reads and "RequesterObjectId" in reads
    signins = by_name["hpclz-cluster-signins"]
    # OpenSSH 9.8+ logs the login from sshd-session (openssh-portable auth.c auth_log format string).
    assert signins.startswith("Syslog") and "'sshd-session'" in signins and "'Accepted '" in signins


def test_audit_follows_monitoring_diagnostic_settings() -> None:
    assert _audit("manufacturing")  # on by default
    config = load_config(REPO / "configs" / "finance.yaml").config
    assert not isinstance(config.monitoring, Disabled)
    config.monitoring.diagnostic_settings = False
    assert [d for d in build_plan(config).deployments if d.component == "audit"] == []


def test_a_category_of_the_wrong_type_fails_the_pinned_schema() -> None:
    (audit,) = _audit("finance")
    template = dict(audit.template)
    activity = next(r for r in template["resources"] if r["type"] == DIAG)
    broken = {**activity, "properties": {**activity["properties"], "logs": [{"category": 7, "enabled": "yes"}]}}
    template["resources"] = [broken]
    assert schema_findings(template, scope="subscription")
    template["resources"] = [activity]
    assert schema_findings(template, scope="subscription") == []


def test_moving_the_logs_to_another_workspace_is_in_place() -> None:
    verdict = policies.property_verdict(DIAG, "properties.workspaceId", "/a", "/b", False)
    assert verdict.policy is Policy.IN_PLACE and "old workspace" in verdict.reason
