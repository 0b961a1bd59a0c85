"""The Readers a Bastion tunnel needs (src/hpclz/render/roles.py bastion_readers): rendered only with the Bastion host,
never twice for a group that is both a users and a readers group, and never a reach the identity rules refuse."""

from __future__ import annotations

from typing import Any

from hpclz.config import load_config
from hpclz.config.identity import BuiltinRole
from hpclz.findings import Finding
from hpclz.render.roles import ROLE_IDS, Assignment, assignments
from hpclz.render.zone import Zone
from hpclz.rules.config.identity import NoReachBeyondTheJob, NoUserReachesCycleCloudIdentity
from hpclz.rules.context import ConfigContext
from tests.conftest import REPO
from tests.plan.support import edited, preset

READER = ROLE_IDS[BuiltinRole.READER]


def _readers(config: Any, area: str, group: str) -> list[Assignment]:
    return [
        a for a in assignments(Zone(config), area)
        if a.principal_id == group and READER in a.role_definition_id
    ]  # fmt: skip


def test_users_and_admins_read_the_bastion_host_and_users_the_compute_group() -> None:
    config = preset("energy")
    user, admin = config.identity.groups.users[0], config.identity.groups.admins[0]
    bastion = f"Microsoft.Network/bastionHosts/{Zone(config).names.name('bastion')}"
    assert [a.scope for a in _readers(config, "network", user)] == [bastion]
    assert [a.scope for a in _readers(config, "network", admin)] == [bastion]
    assert [a.scope for a in _readers(config, "compute", user)] == [None]  # the whole group: the login nodes come later
    assert _readers(config, "compute", admin) == []  # Contributor there already
    for area in ("management", "storage", "monitoring"):
        assert _readers(config, area, user) == []


def test_no_bastion_no_reader() -> None:
    def off(d: dict[str, Any]) -> None:
        d["network"]["bastion"]["enabled"] = False

    config = edited(preset("energy"), off)
    user, admin = config.identity.groups.users[0], config.identity.groups.admins[0]
    for area in ("network", "compute"):
        assert _readers(config, area, user) == [] and _readers(config, area, admin) == []


def test_a_users_group_that_is_also_a_readers_group_gets_one_reader_on_the_compute_group() -> None:
    """Both would be named guid(resourceGroup().id, group, Reader): one template may not declare it twice."""

    def both(d: dict[str, Any]) -> None:
        d["identity"]["groups"]["readers"] = [d["identity"]["groups"]["users"][0]]

    config = edited(preset("energy"), both)
    user = config.identity.groups.users[0]
    compute = assignments(Zone(config), "compute")
    assert len(_readers(config, "compute", user)) == 1
    assert len({a.name for a in compute}) == len(compute)


def test_the_bastion_readers_pass_the_identity_reach_rules() -> None:
    """Reader holds no run command, sign-in, identity attach or secret read (HPCLZ-IDN-011, HPCLZ-IDN-012)."""
    for name in ("energy", "ai-training", "manufacturing"):
        ctx = ConfigContext(load_config(REPO / "configs" / f"{name}.yaml"))
        found: list[Finding] = [
            *NoUserReachesCycleCloudIdentity().check(ctx),
            *NoReachBeyondTheJob().check(ctx),
        ]
        assert found == [], (name, found)
