"""Next steps name the exact Entra ID sign-in command for the CycleCloud server when identity.groups can use it."""

from __future__ import annotations

from pathlib import Path

from hpclz.config import load_config
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.next_steps import next_steps
from hpclz.state.factory import new_state
from hpclz.state.model import ResourceRecord, StateDocument
from tests.conftest import REPO

VM = (
    "/subscriptions/00000000-0000-0000-0000-00000000c0de/resourceGroups/rg-riskgrid-compute-prod-weu"
    "/providers/Microsoft.Compute/virtualMachines/vm-riskgrid-cc-prod-weu"
)


def _server_only(path: str) -> tuple[LoadedConfig, StateDocument]:
    """A state with the CycleCloud server and its NIC, no Bastion (reached over the hub's network)."""
    loaded = load_config(path)
    doc = new_state(loaded.config)
    nic = {"ipConfigurations": [{"properties": {"privateIPAddress": "10.60.1.4"}}]}
    doc.resources = [
        ResourceRecord(
            id=VM,
            type="Microsoft.Compute/virtualMachines",
            name="vm-riskgrid-cc-prod-weu",
            api_version="x",
            deployment="c",
        ),
        ResourceRecord(
            id=VM.replace("virtualMachines/vm-", "networkInterfaces/nic-"),
            type="Microsoft.Network/networkInterfaces",
            name="nic-riskgrid-cc-prod-weu",
            api_version="x",
            deployment="c",
            properties=nic,
        ),
    ]
    return loaded, doc


def test_without_bastion_entra_users_get_az_ssh_vm_on_the_private_ip() -> None:
    """`az ssh vm --ip` as MicrosoftDocs/entra-docs:docs/identity/devices/howto-vm-sign-in-azure-ad-linux.md gives it."""
    loaded, doc = _server_only(str(REPO / "configs" / "finance.yaml"))
    assert loaded.config.identity.groups.users  # the preset maps groups to the VM login roles
    steps = next_steps(loaded, doc)
    assert "CycleCloud server shell with your Entra ID account: az ssh vm --ip 10.60.1.4" in steps


def test_no_entra_command_when_entra_login_is_off(tmp_path: Path) -> None:
    text = (REPO / "configs" / "finance.yaml").read_text(encoding="utf-8")
    config = tmp_path / "finance.yaml"
    config.write_text(text.replace("identity:\n", "identity:\n  entra_login: false\n", 1), encoding="utf-8")
    loaded, doc = _server_only(str(config))
    assert loaded.config.identity.entra_login is False
    # The server takes no Entra ID sign-in; the nodes still do, through CycleCloud's app (identity.cyclecloud_entra).
    assert not any("CycleCloud server shell with your Entra ID account" in step for step in next_steps(loaded, doc))


def test_cyclecloud_entra_says_how_entra_users_reach_the_nodes() -> None:
    loaded, doc = _server_only(str(REPO / "configs" / "energy.yaml"))
    assert loaded.config.identity.cyclecloud_entra is not None
    (step,) = [s for s in next_steps(loaded, doc) if s.startswith("Cluster nodes with your Entra ID account")]
    assert "Global.Node.User" in step and "https://10.60.1.4/home" in step and "SSH public key" in step


def test_each_group_gets_the_app_roles_of_its_cluster_role_and_readers_none() -> None:
    """The app roles CCWS's app defines (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep)."""
    loaded, doc = _server_only(str(REPO / "configs" / "finance.yaml"))
    groups = loaded.config.identity.groups
    steps = [s for s in next_steps(loaded, doc) if s.startswith("In CycleCloud's app")]
    (admins,) = [s for s in steps if groups.admins[0] in s]
    (users,) = [s for s in steps if groups.users[0] in s]
    assert "SuperUser and Global.Node.Admin: node access account with sudo" in admins
    assert "User and Global.Node.User: node access account (" in users
    assert groups.readers and not any(groups.readers[0] in s for s in steps)


def test_no_node_sign_in_step_without_cyclecloud_entra(tmp_path: Path) -> None:
    text = (REPO / "configs" / "finance.yaml").read_text(encoding="utf-8")
    config = tmp_path / "finance.yaml"
    config.write_text("".join(line for line in text.splitlines(keepends=True) if "cyclecloud_entra:" not in line))
    loaded, doc = _server_only(str(config))
    assert loaded.config.identity.cyclecloud_entra is None
    steps = next_steps(loaded, doc)
    assert not any(s.startswith(("Cluster nodes with your Entra ID account", "In CycleCloud's app")) for s in steps)
