"""Attribute-level plan lines: every property of a create (`+ name = value`), each changed property of an update
with the unchanged ones counted, secrets shown as (sensitive), in text (--attributes, --target) and JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hpclz.azure.backends import open_backend
from hpclz.cli.views.changeset import print_changeset
from hpclz.config.loader import load_config
from hpclz.plan.attributes import SENSITIVE, attributes, leaves, unchanged_count
from hpclz.plan.changeset import Action, ChangeSet, ResourceChange
from hpclz.plan.offline import offline_changeset, resource_change
from hpclz.plan.resources import desired_resources
from hpclz.plan.whatif import whatif_changeset
from hpclz.render.build import build_plan
from tests.conftest import REPO, CliResult
from tests.plan.support import applied_state, edited, preset

Run = Callable[..., CliResult]
SECRET = "licence-key-7f3a9c"  # a value that must never be printed
RID = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    return path


def _text(changes: ChangeSet, **flags: Any) -> str:
    console = Console(width=400, no_color=True, record=True)
    print_changeset(console, changes, **flags)
    return console.export_text()


def _by_name(changes: ChangeSet, rtype: str) -> ResourceChange:
    return next(r for r in changes.resources if r.type == rtype)


def test_leaves_name_list_items_and_keep_plain_lists_whole() -> None:
    body = {"a": {"b": 1, "c": ["x", "y"]}, "rules": [{"name": "ssh", "port": 22}], "empty": {}}
    assert leaves(body) == [("a.b", 1), ("a.c", ["x", "y"]), ("rules[ssh].name", "ssh"), ("rules[ssh].port", 22),
                            ("empty", {})]  # fmt: skip


def test_values_that_carry_secrets_are_masked_and_others_are_not() -> None:
    body = {
        "name": "vm1",
        "properties": {
            "osProfile": {"adminPassword": "hunter2-literal", "adminUsername": "hpcadmin"},
            "settings": "[parameters('dbKey')]",  # a secureString parameter under a key that names no secret
            "plain": "[parameters('region')]",
            "linuxConfiguration": {"disablePasswordAuthentication": True},
            "accessPolicies": {"secrets": ["get", "list"]},  # permission names, not a secret
        },
    }
    shown = {a.path: a.after for a in attributes("Microsoft.Compute/virtualMachines", body, frozenset({"dbKey"}))}
    assert shown == {
        "properties.osProfile.adminPassword": SENSITIVE,
        "properties.osProfile.adminUsername": "hpcadmin",
        "properties.settings": SENSITIVE,
        "properties.plain": "[parameters('region')]",
        "properties.linuxConfiguration.disablePasswordAuthentication": True,
        "properties.accessPolicies.secrets": ["get", "list"],
    }
    assert all(a.kind is Action.CREATE for a in attributes("x/y", body))


def test_creates_carry_every_attribute_with_secrets_masked() -> None:
    config = edited(
        preset("energy"), lambda d: d["identity"]["key_vault"].setdefault("secrets", {}).update({"licence-key": SECRET})
    )
    plan = build_plan(config)
    changes = offline_changeset(plan, None)
    server = next(r for r in changes.resources if r.name.startswith("vm-") and "-cc-" in r.name)
    desired = next(d for d in desired_resources(plan) if d.id == server.id)
    shown = {a.path: a.after for a in server.attributes}
    # Every leaf of the rendered body but the resource's own name and type, which the line already shows.
    assert len(server.attributes) == len(leaves({k: v for k, v in desired.body.items() if k != "name"}))
    assert shown["properties.hardwareProfile.vmSize"] == config.compute.cyclecloud.vm_size
    secret = next(r for r in changes.resources if r.name.endswith("/licence-key"))
    assert {a.path: a.after for a in secret.attributes}["properties.value"] == SENSITIVE
    mysql = _by_name(changes, "Microsoft.DBforMySQL/flexibleServers")
    assert {a.path: a.after for a in mysql.attributes}["properties.administratorLoginPassword"] == SENSITIVE
    assert SECRET not in json.dumps(changes.payload())
    text = _text(changes, show_attributes=True)
    assert f'+ properties.hardwareProfile.vmSize = "{config.compute.cyclecloud.vm_size}"' in text
    assert "+ properties.value = (sensitive)" in text and SECRET not in text
    assert "+ properties.osProfile.customData = (base64, " in text  # not a wall of base64
    quiet = _text(changes)
    assert "properties.hardwareProfile.vmSize" not in quiet


def test_updates_show_each_change_and_count_the_rest() -> None:
    config = preset("energy")
    state = applied_state(config)
    grown = edited(config, lambda d: d["storage"]["lustre"].update({"capacity_tib": 32}))
    changes = offline_changeset(build_plan(grown), state)
    (lustre,) = changes.changed_resources
    body = next(d.body for d in desired_resources(build_plan(grown)) if d.id.endswith(lustre.name))
    assert [(c.path, c.before, c.after) for c in lustre.changes] == [("properties.storageCapacityTiB", 48, 32)]
    assert lustre.unchanged_attributes == len(leaves(body)) - 1 > 0
    assert f"# ({lustre.unchanged_attributes} unchanged attributes hidden)" in _text(changes)


def test_an_updated_secret_is_masked_on_both_sides() -> None:
    before = {"properties": {"osProfile": {"adminPassword": "old-literal", "adminUsername": "a"}}}
    after = {"properties": {"osProfile": {"adminPassword": "new-literal", "adminUsername": "a"}}}
    change = resource_change("Microsoft.Compute/virtualMachines", "vm1", RID, "d", False, before, after)
    assert [(c.path, c.before, c.after) for c in change.changes] == [
        ("properties.osProfile.adminPassword", SENSITIVE, SENSITIVE)
    ]
    assert change.action is Action.MODIFY and change.unchanged_attributes == 1
    assert "literal" not in _text(ChangeSet(mode="offline", landing_zone="t", environment="d", resources=[change]))


def test_whatif_creates_and_modifies_carry_attributes() -> None:
    after = {"id": RID, "name": "vm1", "type": "Microsoft.Compute/virtualMachines", "location": "eastus",
             "properties": {"osProfile": {"adminPassword": "p-literal"}, "hardwareProfile": {"vmSize": "A"}}}  # fmt: skip
    bigger = json.loads(json.dumps(after).replace('"A"', '"B"'))
    raw = {
        "status": "Succeeded",
        "properties": {
            "changes": [
                {"resourceId": RID, "changeType": "Create", "after": after},
                {"resourceId": RID + "2", "changeType": "Modify", "before": after, "after": bigger,
                 "delta": [{"path": "properties.hardwareProfile.vmSize", "propertyChangeType": "Modify",
                            "before": "A", "after": "B"}]},
            ]
        },
    }  # fmt: skip
    created, modified = whatif_changeset({"d": raw}, landing_zone="t", environment="dev").resources
    assert {a.path: a.after for a in created.attributes} == {
        "location": "eastus",
        "properties.osProfile.adminPassword": SENSITIVE,
        "properties.hardwareProfile.vmSize": "A",
    }
    assert modified.unchanged_attributes == unchanged_count(bigger, modified.changes) == 5


def _apply(config: Path) -> None:
    loaded = load_config(config)
    backend = open_backend(loaded.config, base_dir=config.parent)
    backend.read()
    backend.write(applied_state(loaded.config))


def test_cli_attributes_flag_target_and_json(run_cli: Run, config: Path) -> None:
    plain = run_cli("plan", str(config), "--offline")
    assert plain.exit_code == 0, plain.stderr
    assert "properties.hardwareProfile.vmSize" not in plain.stdout
    assert "--attributes or -o json shows them" in plain.stdout
    every = run_cli("plan", str(config), "--offline", "--attributes")
    assert '+ properties.hardwareProfile.vmSize = "Standard_D4as_v5"' in every.stdout
    assert "+ properties.administratorLoginPassword = (sensitive)" in every.stdout
    body = json.loads(run_cli("plan", str(config), "--offline", "-o", "json").stdout)["result"]
    vault = next(r for r in body["resources"] if r["type"] == "Microsoft.KeyVault/vaults")
    assert vault["attributes"] and all(a["kind"] == "create" for a in vault["attributes"])
    targeted = run_cli("plan", str(config), "--offline", "--target", vault["id"])
    assert targeted.exit_code == 0, targeted.stderr
    assert "+ properties.enablePurgeProtection = true" in targeted.stdout
    # Only the target's attributes: the group it sits in is created too, without them.
    assert "+ Microsoft.Resources/resourceGroups" in targeted.stdout
    assert "+ location" in targeted.stdout and targeted.stdout.count("+ location = ") == 1
