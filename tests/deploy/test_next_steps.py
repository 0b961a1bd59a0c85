"""Next steps name the exact Entra ID sign-in command for the CycleCloud server when identity.groups can use it."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from hpclz.config import load_config
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.next_steps import next_steps
from hpclz.state.factory import new_state
from hpclz.state.model import ResourceRecord, StateDocument
from tests.conftest import REPO
from tests.rules.cases import preset_doc

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


BASTION = (
    "/subscriptions/00000000-0000-0000-0000-00000000c0de/resourceGroups/rg-net/providers"
    "/Microsoft.Network/bastionHosts/bas-zone"
)


def _with_bastion(path: str) -> tuple[LoadedConfig, StateDocument]:
    loaded, doc = _server_only(path)
    doc.resources.append(
        ResourceRecord(
            id=BASTION, type="Microsoft.Network/bastionHosts", name="bas-zone", api_version="x", deployment="n"
        )
    )
    return loaded, doc


def _bastion_only(tmp_path: Path) -> tuple[LoadedConfig, StateDocument]:
    """ai-training without its hub peering: Bastion is the only way in, and it is the admins'."""
    doc = preset_doc("ai-training")
    del doc["network"]["hub_peering"]
    config = tmp_path / "ai-training.yaml"
    YAML(typ="safe").dump(doc, config)
    return _with_bastion(str(config))


def _redirect_step(steps: list[str]) -> list[str]:
    (step,) = [s for s in steps if s.startswith("CycleCloud sign-in: the app registration")]
    return step.split("redirect URIs: ", 1)[1].split(" (docs/", 1)[0].split()


def test_redirect_uris_are_home_and_sso_of_each_host_the_steps_open(tmp_path: Path) -> None:
    """CycleCloud's article registers https://{host}/home and https://{host}/sso as Single-page application URIs
    (MicrosoftDocs/azure-docs@03e5750:articles/cyclecloud/how-to/create-app-registration.md, "Configuring redirect
    URIs"), as CCWS does (Azure/cyclecloud-slurm-workspace@bc0fc1b util/entra_postdeploy.sh l.50-55)."""
    # Bastion only: the SSH forward's local end, the page the admins' step opens.
    loaded, doc = _bastion_only(tmp_path)
    assert loaded.config.network.hub_peering is None
    steps = next_steps(loaded, doc)
    assert _redirect_step(steps) == ["https://localhost:8443/home", "https://localhost:8443/sso"]
    assert any("then open https://localhost:8443/home" in s for s in steps)
    (users,) = [s for s in steps if s.startswith("Cluster nodes with your Entra ID account")]
    assert "route into the VNet (hub peering or VPN; this zone has none)" in users
    # Bastion and hub peering (every preset with Bastion): both ways, each opened by a step; users sign in from the hub.
    for preset in ("manufacturing", "ai-training", "energy"):
        loaded, doc = _with_bastion(str(REPO / "configs" / f"{preset}.yaml"))
        assert loaded.config.network.hub_peering is not None
        steps = next_steps(loaded, doc)
        assert _redirect_step(steps) == [
            "https://localhost:8443/home",
            "https://localhost:8443/sso",
            "https://10.60.1.4/home",
            "https://10.60.1.4/sso",
        ], preset
        assert any("sign in at https://10.60.1.4/home from a machine that reaches the VNet" in s for s in steps)
        assert not any("this zone has none" in s for s in steps), preset
    # No Bastion (finance): the private address the "No Bastion" step opens, nothing on localhost.
    loaded, doc = _server_only(str(REPO / "configs" / "finance.yaml"))
    steps = next_steps(loaded, doc)
    assert _redirect_step(steps) == ["https://10.60.1.4/home", "https://10.60.1.4/sso"]
    assert any(s.endswith("UI at https://10.60.1.4/home") for s in steps)
    assert not any("localhost:8443" in s for s in steps)


def test_bastion_tunnels_only_to_ssh_and_forwards_the_ui_for_admins() -> None:
    """ "Connect to a VM using SSH or RDP. (The bastion tunnel doesn't relay web servers or hosts.)"
    (MicrosoftDocs/azure-docs@b8db86a:includes/bastion-native-connect-tunnel.md l.11); CCWS tunnels port 22 to 8822
    (Azure/cyclecloud-slurm-workspace@bc0fc1b util/tunnel_thru_bastion.sh l.9)."""
    loaded, doc = _with_bastion(str(REPO / "configs" / "ai-training.yaml"))
    (ui,) = [s for s in next_steps(loaded, doc) if s.startswith("CycleCloud UI")]
    assert "for the cluster admins" in ui
    assert f"--target-resource-id {VM} --resource-port 22 --port 8822," in ui
    assert "ssh -N -p 8822 -L 8443:localhost:443 -i <your private key> hpcadmin@127.0.0.1" in ui
    assert "--resource-port 443" not in ui


def _registration_json(uris: list[str]) -> dict[str, Any]:
    """The app registration docs/entra-login.md PATCHes, built by bash from its script's own lines, with `uris` as
    the script's SPA_URIS and a stand-in for the Graph scope look-up (the only `az` call inside the JSON)."""
    doc = (REPO / "docs" / "entra-login.md").read_text(encoding="utf-8")
    section = doc.split("### Register CycleCloud's app in Entra ID", 1)[1].split("#### Redirect URIs", 1)[0]
    script = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = script.splitlines()
    graph = next(line for line in lines if line.startswith("GRAPH="))
    spa = next(line for line in lines if line.startswith("SPA="))
    first = lines.index("cat > cyclecloud-app.json <<EOF")
    heredoc = lines[first + 1 : lines.index("EOF", first)]
    program = "\n".join(
        [
            "APP=app-id; SCOPE=scope-id",
            graph,
            'graph_scope() { echo "graph-$1"; }',
            f"SPA_URIS={shlex.quote(' '.join(uris))}",
            spa,
            "cat <<EOF",
            *heredoc,
            "EOF",
        ]
    )
    out = subprocess.run(["bash", "-c", program], check=True, capture_output=True, text=True).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def test_the_documented_registration_is_the_articles_and_ccws(tmp_path: Path) -> None:
    """CycleCloud's article (MicrosoftDocs/azure-docs@03e5750:articles/cyclecloud/how-to/create-app-registration.md)
    and CCWS's app (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep l.75-216)."""
    loaded, doc = _bastion_only(tmp_path)
    printed = _redirect_step(next_steps(loaded, doc))
    app = _registration_json(printed)
    # Single-page application, /home and /sso: exactly what the next steps print; no Web redirect URI.
    assert app["spa"] == {"redirectUris": printed}
    assert "redirectUris" not in app["web"] and app["web"]["implicitGrantSettings"]["enableIdTokenIssuance"] is True
    # Public client flows and the CLI's redirect URIs (ccwEntraApp.bicep l.83-90).
    assert app["isFallbackPublicClient"] is True
    assert app["publicClient"] == {"redirectUris": ["http://localhost", "https://localhost"]}
    # The app's own user_access scope, and the permission to it (ccwEntraApp.bicep l.173-201).
    (scope,) = app["api"]["oauth2PermissionScopes"]
    assert (scope["id"], scope["value"], scope["type"], scope["isEnabled"]) == ("scope-id", "user_access", "User", True)
    assert app["api"]["requestedAccessTokenVersion"] == 1
    assert app["identifierUris"] == ["api://app-id"]
    access = {r["resourceAppId"]: r["resourceAccess"] for r in app["requiredResourceAccess"]}
    assert access["app-id"] == [{"id": "scope-id", "type": "Scope"}]
    assert access["00000003-0000-0000-c000-000000000000"] == [
        {"id": "graph-profile", "type": "Scope"},
        {"id": "graph-User.Read", "type": "Scope"},
    ]
    # The script's own SPA_URIS are the Bastion pair the next steps print for a Bastion zone.
    text = (REPO / "docs" / "entra-login.md").read_text(encoding="utf-8")
    assert f'SPA_URIS="{" ".join(printed)}"' in text
    assert "--web-redirect-uris" not in text and "--resource-port 443" not in text
    assert _registration_json([])["spa"] == {"redirectUris": []}


def test_an_unpinned_release_says_how_to_read_and_pin_the_digests_the_server_recorded(tmp_path: Path) -> None:
    """The record's blob is the one userData names for hpclz-cluster-sync (project_record); pinned, no step."""
    from hpclz.render.build import build_plan

    loaded, doc = _server_only(str(REPO / "configs" / "finance.yaml"))
    (step,) = [s for s in next_steps(loaded, doc) if s.startswith("Pin cyclecloud-slurm 4.0.9")]
    (compute,) = [d for d in build_plan(loaded.config).deployments if d.component == "compute"]
    record = json.loads(json.loads(compute.artifacts["cloud-init/cyclecloud-userdata.json"])["project_record"])
    assert (
        f"az storage blob download --auth-mode login --account-name {record['account']} --container-name "
        f"{record['container']} --name {record['blob']} --file {record['blob']}"
    ) in step
    assert "sudo grep recorded /var/log/hpclz-cluster-sync.log" in step
    data = preset_doc("finance")
    data["compute"]["cyclecloud"]["slurm_project_sha256"] = {"azure-slurm-pkg-4.0.9.tar.gz": "a" * 64}
    config = tmp_path / "finance.yaml"
    YAML().dump(data, config)
    pinned, doc = _server_only(str(config))
    assert not any(s.startswith("Pin cyclecloud-slurm") for s in next_steps(pinned, doc))
