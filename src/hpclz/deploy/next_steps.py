"""What to do after a deploy, in commands that work against what was just deployed.

ARM creates one VM, the CycleCloud server; the Slurm scheduler and login nodes are CycleCloud nodes it starts
(templates/cyclecloud/slurm-cluster.txt.j2: `[[node scheduler]]`, `[[nodearray login]]`), so they are reached
from the server with `cyclecloud connect <node> -c <cluster>` (learn.microsoft.com/azure/cyclecloud/cli,
"cyclecloud connect: Connects to a running instance in the cluster ... a node name, a hostname, or an IP").
The server is reached through Bastion with `az network bastion ssh` / `az network bastion tunnel`
(learn.microsoft.com/cli/azure/network/bastion, the `bastion` extension; the same commands as
Azure/cyclecloud-slurm-workspace util/ssh_thru_bastion.sh and util/tunnel_thru_bastion.sh). Both need Bastion's
native client support: Standard or Premium SKU with tunneling enabled (learn.microsoft.com/azure/bastion/native-client).

The tunnel carries SSH or RDP only: "Connect to a VM using SSH or RDP. (The bastion tunnel doesn't relay web servers
or hosts.)" (MicrosoftDocs/azure-docs@b8db86a:includes/bastion-native-connect-tunnel.md l.11, included by
articles/bastion/connect-vm-native-client-linux.md, "Connect to a VM - tunnel command"). So the CycleCloud UI is
reached as CCWS reaches its VMs, a tunnel to port 22 (Azure/cyclecloud-slurm-workspace@bc0fc1b
util/tunnel_thru_bastion.sh l.9: `--resource-port 22 --port 8822`), then ssh's own port forwarding (`ssh -L`) to
the server's HTTPS. A tunnel to 443 would not serve a browser either: the CLI's tunnel serves one TCP connection at a
time, to its end (Azure/azure-cli-extensions@144a628 src/bastion/azext_bastion/tunnel.py l.116-148,
`TunnelServer._listen`: it accepts one connection, opens one websocket for it and joins both relay threads before the
next accept), so a browser's parallel and kept-alive HTTPS connections wait behind each other; one SSH connection
carries every `ssh -L` forward. Only the cluster admins may sign in to the server (HPCLZ-IDN-011), so only they have
this way.
"""

from __future__ import annotations

from pathlib import Path

from hpclz.config.loader import LoadedConfig
from hpclz.deploy.portal_steps import portal_steps
from hpclz.plan.changeset import ChangeSet
from hpclz.state.model import StateDocument

# The server's web UI listens on HTTPS 443 (cloud-init: `cyclecloud initialize --url=https://localhost`);
# a local port above 1024 needs no root on the user's machine.
UI_PORT = 443
LOCAL_UI_PORT = 8443
SSH_PORT = 22
# CCWS's local end of the Bastion tunnel to port 22 (util/tunnel_thru_bastion.sh l.9).
LOCAL_SSH_PORT = 8822
# Where CycleCloud's web UI sends the browser back after Entra ID sign-in: its app registration's Single-page
# application redirect URIs, https://{host}/home and https://{host}/sso ("Configuring redirect URIs",
# MicrosoftDocs/azure-docs@03e5750:articles/cyclecloud/how-to/create-app-registration.md; CCWS registers both as
# `spa.redirectUris`, Azure/cyclecloud-slurm-workspace@bc0fc1b util/entra_postdeploy.sh l.50-55).
UI_REDIRECT_PATHS = ("home", "sso")


def _of_type(doc: StateDocument, kind: str) -> list[tuple[str, str]]:
    """(name, resource ID) of each resource of one type in the state."""
    return [(r.name, r.id) for r in doc.resources if r.type.lower() == kind]


def _private_ip(doc: StateDocument, vm_name: str) -> str | None:
    for nic in (r for r in doc.resources if r.type.lower() == "microsoft.network/networkinterfaces"):
        if vm_name.removeprefix("vm-") not in nic.name:
            continue
        for config in nic.properties.get("ipConfigurations") or []:
            address = (config.get("properties") or {}).get("privateIPAddress")
            if isinstance(address, str) and not address.startswith("["):
                return address
    return None


def _server(doc: StateDocument) -> tuple[str, str] | None:
    vms = _of_type(doc, "microsoft.compute/virtualmachines")
    # hpclz names the CycleCloud server vm-<zone>-cc-... (NameBuilder.cyclecloud_vm).
    return next((vm for vm in vms if "-cc-" in vm[0]), vms[0] if vms else None)


def _through_bastion(loaded: LoadedConfig, doc: StateDocument, server_id: str) -> list[str]:
    bastions = _of_type(doc, "microsoft.network/bastionhosts")
    if not bastions:
        return []
    name, bastion_id = bastions[0]
    where = f"--name {name} --resource-group {bastion_id.split('/')[4]} --target-resource-id {server_id}"
    user = loaded.config.identity.admin_username
    steps = [
        f"CycleCloud UI, for the cluster admins (nobody else may sign in to the server): "
        f"az network bastion tunnel {where} --resource-port {SSH_PORT} --port {LOCAL_SSH_PORT}, then "
        f"ssh -N -p {LOCAL_SSH_PORT} -L {LOCAL_UI_PORT}:localhost:{UI_PORT} -i <your private key> {user}@127.0.0.1, "
        f"then open https://localhost:{LOCAL_UI_PORT}/home (Bastion's tunnel carries SSH, not web servers)",
        f"CycleCloud server shell: az network bastion ssh {where} --auth-type ssh-key --username {user} "
        "--ssh-key <your private key>",
    ]
    if _entra(loaded):
        # Bastion's native client signs in with Entra ID when the VM has the Entra ID login extension
        # (MicrosoftDocs/azure-docs:articles/bastion/connect-vm-native-client-linux.md, "Microsoft Entra authentication").
        steps.append(
            f"CycleCloud server shell with your Entra ID account: az network bastion ssh {where} --auth-type AAD"
        )
    if loaded.config.network.bastion.sku == "Basic":
        steps.append("Bastion Basic has no native client support: set network.bastion.sku: Standard for these")
    return steps


def ui_hosts(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    """The host[:port] each way to the CycleCloud UI that the next steps print puts in the browser's address bar:
    `localhost:8443` through Bastion (the SSH forward's local end), the server's private address where people arrive
    over their own network (no Bastion, or hub peering beside it)."""
    server = _server(doc)
    if server is None:
        return []
    address = _private_ip(doc, server[0])
    bastion = bool(_of_type(doc, "microsoft.network/bastionhosts"))
    hosts = [f"localhost:{LOCAL_UI_PORT}"] if bastion else []
    if not bastion or loaded.config.network.hub_peering is not None:
        hosts.append(address or server[0])
    return hosts


def ui_redirect_uris(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    """Every Single-page application redirect URI CycleCloud's app registration needs for the ways in printed."""
    return [f"https://{host}/{path}" for host in ui_hosts(loaded, doc) for path in UI_REDIRECT_PATHS]


def _redirect_step(loaded: LoadedConfig, doc: StateDocument, client_id: str, registered: set[str] | None) -> list[str]:
    """The SPA redirect URIs to register: all of them when the app's own were not read, else only those it lacks."""
    uris = ui_redirect_uris(loaded, doc)
    if registered is None:
        return [
            f"CycleCloud sign-in: the app registration {client_id} needs exactly these Single-page application "
            f'redirect URIs: {" ".join(uris)} (docs/entra-login.md, "Redirect URIs")'
        ]
    lacking = [u for u in uris if u not in registered]
    if not lacking:
        return []
    return [
        f"CycleCloud sign-in: the app registration {client_id} lacks these Single-page application redirect URIs: "
        f'{" ".join(lacking)} (docs/entra-login.md, "Redirect URIs")'
    ]


def _cyclecloud_entra(
    loaded: LoadedConfig, doc: StateDocument, missing: set[tuple[str, str]] | None, registered: set[str] | None
) -> list[str]:
    """CycleCloud's built-in user management gives each user with node access a local account, with the SSH key
    of their CycleCloud profile, on every node (learn.microsoft.com/azure/cyclecloud/how-to/user-access); with
    Entra ID sign-in, node access is the app's Global.Node.User or Global.Node.Admin role (the roles
    Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep defines; docs/entra-login.md).
    `missing`: the (config path, app role) pairs deploy could not make through Graph; None: every one. `registered`:
    the app's SPA redirect URIs as Graph holds them; None: not read."""
    from hpclz.render.entra import app_role_assignments
    from hpclz.render.zone import Zone

    entra = loaded.config.identity.cyclecloud_entra
    if entra is None:
        return []
    steps = []
    for a in app_role_assignments(Zone(loaded.config)):
        roles = [r for r in a["app_roles"] if missing is None or (a["path"], r) in missing]
        if roles:
            steps.append(
                f"In CycleCloud's app {entra.client_id}, give {a['path']} ({a['group']}) the app roles "
                f"{' and '.join(roles)}: node access {a['node_access']} (docs/entra-login.md)"
            )
    hosts = ui_hosts(loaded, doc)
    sign_in = " or ".join(f"https://{h}/home" for h in hosts if not h.startswith("localhost"))
    where = (
        f"sign in at {sign_in} from a machine that reaches the VNet"
        if sign_in
        else "reach the CycleCloud UI over a route into the VNet (hub peering or VPN; this zone has none): Bastion's "
        "tunnel carries SSH only and only admins may sign in to the CycleCloud server"
    )
    return [
        *_redirect_step(loaded, doc, entra.client_id, registered),
        *steps,
        f"Cluster nodes with your Entra ID account: hold the CycleCloud app's Global.Node.User role, {where}; add "
        "your SSH public key to your CycleCloud profile, then ssh to a login node as your CycleCloud user name "
        "(docs/entra-login.md)",
    ]


def _entra(loaded: LoadedConfig) -> bool:
    from hpclz.render.roles import entra_login
    from hpclz.render.zone import Zone

    return entra_login(Zone(loaded.config))


def next_steps(
    loaded: LoadedConfig,
    doc: StateDocument,
    missing_app_roles: set[tuple[str, str]] | None = None,
    registered_redirects: set[str] | None = None,
) -> list[str]:
    """How to reach the CycleCloud UI and the cluster's nodes, and where `hpclz verify` runs. `missing_app_roles`:
    the CycleCloud app roles (config path, role) still to give; None: all of them (deploy made none).
    `registered_redirects`: the SPA redirect URIs CycleCloud's app holds (Graph); None: unknown, list them all."""
    from hpclz.render.cloudinit import cluster_name
    from hpclz.render.zone import Zone

    server = _server(doc)
    if server is None:
        return []
    name, server_id = server
    address = _private_ip(doc, name)
    steps = [f"CycleCloud server: {name}" + (f" ({address})" if address else "")]
    steps += _through_bastion(loaded, doc, server_id) or [
        f"No Bastion: reach {address or name} over your own network (hub peering or VPN), "
        f"UI at https://{address or name}/home"
    ]
    if _entra(loaded) and not _of_type(doc, "microsoft.network/bastionhosts"):
        # `az ssh vm` with the VM's private IP, from a machine that reaches the VNet (the `ssh` CLI extension;
        # MicrosoftDocs/entra-docs:docs/identity/devices/howto-vm-sign-in-azure-ad-linux.md).
        target = f"--ip {address}" if address else f"--resource-group {server_id.split('/')[4]} --name {name}"
        steps.append(f"CycleCloud server shell with your Entra ID account: az ssh vm {target}")
    cluster = cluster_name(Zone(loaded.config))
    config = Path(loaded.file).name
    if loaded.config.compute.login.count:
        steps.append(f"Login node, from the CycleCloud server: cyclecloud connect login-1 -c {cluster}")
    steps += _cyclecloud_entra(loaded, doc, missing_app_roles, registered_redirects)
    steps += portal_steps(loaded, doc)
    steps.append(
        f"Verify, on the scheduler (from the CycleCloud server: cyclecloud connect scheduler -c {cluster}), "
        f"with a copy of {config}: hpclz verify {config}"
    )
    return steps + _project_record(loaded) + _dashboards(doc)


def node_script_steps(changes: ChangeSet | None) -> list[str]:
    """The plan's steps for running nodes that keep their old scripts (hpclz.plan.node_scripts): the deploy changed
    only the cluster definition new VMs boot from."""
    scripts = changes.node_scripts if changes is not None else None
    if scripts is None or not scripts.steps:
        return []
    return [
        "Node scripts: the scheduler, login nodes and partition nodes running now keep the scripts their VMs were "
        "created with; replace the ones the plan named, in this order:",
        *(f"  {step}" for step in scripts.steps),
    ]


def _project_record(loaded: LoadedConfig) -> list[str]:
    """Where to read the SHA-256 the CycleCloud server recorded for the cyclecloud-slurm release at its first fetch
    (hpclz-cluster-sync, templates/cloud-init/cluster_sync.py `recorded`), when the config pins none. Deploy cannot
    read it for the operator: the server records it after deploy ends, when its sync first runs, and the locker takes
    no traffic from outside the VNet (docs/locker.md). `az storage blob download --auth-mode login` reads a blob with
    the signed-in account's Entra ID token (learn.microsoft.com/cli/azure/storage/blob, "az storage blob download");
    identity.groups.admins hold a data role on the hpclz container (hpclz.render.roles.locker_assignments)."""
    from hpclz.render.cloudinit import project_record_blob
    from hpclz.render.roles import WHEEL_CONTAINER
    from hpclz.render.zone import Zone

    cc = loaded.config.compute.cyclecloud
    if cc.slurm_project_sha256 or not loaded.config.identity.managed_identities.scheduler:
        return []
    blob = project_record_blob(cc.slurm_project_version)
    account = Zone(loaded.config).locker_account_name
    return [
        f"Pin cyclecloud-slurm {cc.slurm_project_version} (HPCLZ-CMP-021): once the server has synced, read the SHA-256 "
        f"it recorded at its first fetch, as an admin from a machine that reaches the locker: az storage blob download "
        f"--auth-mode login --account-name {account} --container-name {WHEEL_CONTAINER} --name {blob} --file {blob} "
        "(or on the CycleCloud server: sudo grep recorded /var/log/hpclz-cluster-sync.log); check each against "
        "sha256sum of the asset downloaded from "
        f"https://github.com/Azure/cyclecloud-slurm/releases/{cc.slurm_project_version} and set them in "
        "compute.cyclecloud.slurm_project_sha256"
    ]


def _dashboards(doc: StateDocument) -> list[str]:
    """ARM cannot create a dashboard inside Managed Grafana: import the rendered ones as CCWS's monitoring does
    (Azure/cyclecloud-monitoring@3da922e:infra/add_dashboards.sh, `az grafana dashboard import`)."""
    steps = []
    for name, grafana_id in _of_type(doc, "microsoft.dashboard/grafana"):
        where = f"--name {name} --resource-group {grafana_id.split('/')[4]}"
        steps.append(
            f"Grafana dashboards: az grafana dashboard import {where} --overwrite true "
            "--definition <render folder>/artifacts/grafana/hpclz-nodes.json (and hpclz-gpus.json)"
        )
    return steps
