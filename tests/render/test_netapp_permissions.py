"""The mode of each NetApp volume's root as render writes it. ANF gives a volume created without unixPermissions a
root of 0770 owned by root ("The Unix permissions setting is set to 0770 by default. This default setting grants
read, write, and execute permissions to the owner and the group, but no permissions are granted to other users",
MicrosoftDocs/azure-docs articles/azure-netapp-files/configure-unix-permissions-change-ownership-mode.md), where
users' jobs get Permission denied: every volume hpclz creates states its mode."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.errors import ConfigError
from tests.arm.test_schema_gate import schema_findings
from tests.render.conftest import preset_plan, variant
from tests.render.test_shared_backup import _of, _storage


def _modes(template: dict[str, Any]) -> dict[str, str | None]:
    return {v["properties"]["creationToken"]: v["properties"].get("unixPermissions") for v in _of(template, "volumes")}


def test_manufacturing_volumes_are_readable_by_users_and_results_writable_by_all() -> None:
    template = _storage(preset_plan("manufacturing"))
    modes = _modes(template)
    # apps: read and traverse for everyone; results: written by every user's jobs, sticky so none deletes another's
    # (Microsoft.NetApp 2024-07-01 unixPermissions: "First digit selects the set user ID(4), set group ID (2) and
    # sticky (1) attributes").
    assert modes["apps"] == "0755"
    assert modes["results"] == "1777"
    assert modes["hpclz-home"] == "0755" and modes["hpclz-sched"] == "0755"
    assert schema_findings(template) == []


def test_a_volume_without_a_mode_gets_0755_not_anfs_0770() -> None:
    def edit(doc: dict[str, Any]) -> None:
        for v in doc["storage"]["netapp"]["volumes"]:
            v.pop("unix_permissions", None)

    assert set(_modes(_storage(variant("manufacturing", edit))).values()) == {"0755"}


def test_a_mode_that_is_not_four_octal_digits_is_refused() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["storage"]["netapp"]["volumes"][0]["unix_permissions"] = "755"

    with pytest.raises(ConfigError, match="unix_permissions"):
        variant("manufacturing", edit)
