"""Node accounts for identity.groups: the CycleCloud app roles hpclz renders per group, and the server set up to sign
users in with that app (hpclz.render.entra; CycleCloud's facts are cited there)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hpclz.render.entra import FIRST_NODE_UID, GLOBAL_NODE_ADMIN, GLOBAL_NODE_USER
from hpclz.render.model import DeploymentPlan
from tests.conftest import PRESETS
from tests.render.conftest import preset_plan, variant
from tests.render.test_cloudinit import _bootstrap

NODE_ROLES = {GLOBAL_NODE_USER, GLOBAL_NODE_ADMIN}


def _compute_artifacts(plan: DeploymentPlan) -> dict[str, str]:
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    return compute.artifacts


@pytest.mark.parametrize("preset", [p.stem for p in PRESETS])
def test_every_preset_gives_users_an_account_admins_sudo_and_readers_nothing(preset: str) -> None:
    plan = preset_plan(preset)
    artifacts = _compute_artifacts(plan)
    document = json.loads(artifacts["cyclecloud/entra-app-roles.json"])
    rows = {row["path"]: row for row in document["assignments"]}
    users = [r for p, r in rows.items() if p.startswith("identity.groups.users")]
    admins = [r for p, r in rows.items() if p.startswith("identity.groups.admins")]
    readers = [r for p, r in rows.items() if p.startswith("identity.groups.readers")]
    assert users and admins, "every preset names users and admins groups"
    for row in users:
        # Global Node User: an account on every node; never Global Node Admin (sudo).
        assert GLOBAL_NODE_USER in row["app_roles"] and GLOBAL_NODE_ADMIN not in row["app_roles"]
        assert row["node_access"] == "account"
    for row in admins:
        assert GLOBAL_NODE_ADMIN in row["app_roles"] and row["node_access"] == "account with sudo"
    for row in readers:
        assert not NODE_ROLES & set(row["app_roles"]) and row["node_access"] == "none"
    # The UIDs are CycleCloud's, from 20000 up, and the server's own service account sits below them with no node
    # access, so no node user can collide with it.
    assert document["node_uids"]["first"] == FIRST_NODE_UID == 20000
    bootstrap = _bootstrap(plan)  # as the server VM's customData carries it
    service_uid = int(re.search(r"^UID = (\d+)$", bootstrap, flags=re.M).group(1))  # type: ignore[union-attr]
    assert service_uid < FIRST_NODE_UID and "NodeAccessDisabled = true" in bootstrap
    # The server signs users in with the same app, so the roles above are what CycleCloud reads at sign-in.
    app = document["app"]
    assert f"ENTRA_CLIENT_ID={app['client_id']}" in bootstrap and f"ENTRA_TENANT_ID={app['tenant_id']}" in bootstrap
    assert 'Value = true\nName = "authentication.entra.enabled"' in bootstrap


def test_finance_readers_get_no_node_account() -> None:
    document = json.loads(_compute_artifacts(preset_plan("finance"))["cyclecloud/entra-app-roles.json"])
    (readers,) = [r for r in document["assignments"] if r["path"] == "identity.groups.readers[0]"]
    assert readers["app_roles"] == [] and readers["node_access"] == "none"


def test_a_group_added_to_users_gets_the_users_roles() -> None:
    extra = "11111111-2222-4333-8444-555555555555"

    def add(data: dict[str, Any]) -> None:
        data["identity"]["groups"]["users"].append(extra)

    document = json.loads(_compute_artifacts(variant("energy", add))["cyclecloud/entra-app-roles.json"])
    (row,) = [r for r in document["assignments"] if r["group"] == extra]
    assert row == {
        "group": extra,
        "path": "identity.groups.users[1]",
        "app_roles": ["User", GLOBAL_NODE_USER],
        "node_access": "account",
    }


def test_without_cyclecloud_entra_no_assignments_are_rendered() -> None:
    def drop(data: dict[str, Any]) -> None:
        del data["identity"]["cyclecloud_entra"]

    assert "cyclecloud/entra-app-roles.json" not in _compute_artifacts(variant("energy", drop))
