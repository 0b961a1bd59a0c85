"""What editing portal.* costs: a stateless VM recreated for a new boot script, restarted for a new size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpclz.plan.changeset import Action, ChangeSet, Policy
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from tests.plan.support import applied_state, edited, preset

PORTAL_VM = "vm-aitrain-ood-prod-eus2"
SERVER_VM = "vm-aitrain-cc-prod-eus2"


def _changes(edit: Callable[[dict[str, Any]], None], base: str = "ai-training") -> ChangeSet:
    config = preset(base)
    state = applied_state(config)
    new = edited(config, edit)
    changes = offline_changeset(build_plan(new), state)
    changes.config_changes = config_changes(state.applied_config, new)
    return changes


def test_new_sign_in_settings_recreate_the_portal_not_the_cyclecloud_server() -> None:
    def new_client(d: dict[str, Any]) -> None:
        d["portal"]["oidc"]["client_id"] = "9d3e6b1a-2c4f-4a8e-b7d5-1f0e2a3c4b5d"

    changes = _changes(new_client)
    assert [(c.path, c.verdict.policy) for c in changes.config_changes] == [("portal.oidc.client_id", Policy.REPLACE)]
    (vm,) = changes.changed_resources
    assert vm.name == PORTAL_VM
    assert (vm.action, vm.verdict.policy) == (Action.REPLACE, Policy.REPLACE)
    assert "holds no data" in vm.verdict.reason and "--replace" in vm.verdict.action_needed
    assert changes.blocked == []


def test_another_cyclecloud_release_replaces_the_server_from_its_marketplace_image() -> None:
    """The server boots Microsoft's CycleCloud image of the pinned release (hpclz.catalog.versions.STACK), so
    another release is another image: the VM is replaced, never edited in place."""

    def other_release(d: dict[str, Any]) -> None:
        d["compute"]["cyclecloud"].update(version="8.9.0", slurm_project_version="4.0.6", slurm_version="25.05.5")

    changes = _changes(other_release)
    server = next(r for r in changes.changed_resources if r.name == SERVER_VM)
    assert (server.action, server.verdict.policy) == (Action.REPLACE, Policy.REPLACE)


def test_a_new_portal_size_restarts_it_in_place() -> None:
    def resize(d: dict[str, Any]) -> None:
        d["portal"]["vm_size"] = "Standard_D8as_v5"

    changes = _changes(resize)
    assert [(c.path, c.verdict.policy) for c in changes.config_changes] == [("portal.vm_size", Policy.RESTART_NODES)]
    (vm,) = changes.changed_resources
    assert (vm.name, vm.action, vm.verdict.policy) == (PORTAL_VM, Action.MODIFY, Policy.RESTART_NODES)


def test_another_private_range_opens_the_nsg_in_place() -> None:
    def widen(d: dict[str, Any]) -> None:
        d["portal"]["allowed_cidrs"] = ["10.8.0.0/16"]

    changes = _changes(widen)
    (nsg,) = changes.changed_resources
    assert (nsg.name, nsg.action, nsg.verdict.policy) == ("nsg-aitrain-ood-prod-eus2", Action.MODIFY, Policy.IN_PLACE)


def test_turning_the_portal_on_only_creates() -> None:
    def turn_on(d: dict[str, Any]) -> None:
        d["portal"] = {
            "enabled": True,
            "oidc": {
                "tenant_id": "0c6a3d1e-4b2f-4e8a-9d37-8f2b5a1c6e90",
                "client_id": "3c1f9a52-7d4e-4b8a-9e21-5f6d0c8b2a17",
            },
        }

    changes = _changes(turn_on, base="finance")
    created = {r.type for r in changes.resources if r.action is Action.CREATE}
    assert {"Microsoft.Network/networkSecurityGroups", "Microsoft.Network/networkInterfaces"} <= created
    assert "Microsoft.Compute/virtualMachines" in created
    assert changes.changed_resources == [r for r in changes.changed_resources if r.action is Action.CREATE]
