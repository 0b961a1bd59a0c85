"""Next steps for the Open OnDemand portal: how to reach it, and the redirect URIs its app registration needs.

The portal listens on HTTPS 443 with no public IP (hpclz.render.portal). Bastion's tunnel carries SSH or RDP, not
web servers ("The bastion tunnel doesn't relay web servers or hosts.": MicrosoftDocs/azure-docs@b8db86a
includes/bastion-native-connect-tunnel.md l.11), so the way through Bastion is CCWS's tunnel to port 22
(Azure/cyclecloud-slurm-workspace@bc0fc1b util/tunnel_thru_bastion.sh l.9) and ssh's own forward of a local port to
the portal's 443: the CLI's tunnel serves one TCP connection at a time, to its end (Azure/azure-cli-extensions@144a628
src/bastion/azext_bastion/tunnel.py l.116-148, `TunnelServer._listen` joins both relay threads before its next
accept), so a browser's parallel HTTPS connections would wait behind each other, while one SSH connection carries every
forward. The portal's NSG lets SSH in from Bastion for its admins only (hpclz.render.portal), so users reach
the portal by `portal.server_name` over their own network. The local ports differ from the CycleCloud UI's, so both
forwards can run at once, and the browser's `Host` stays `localhost:9443`, one of the portal's `server_aliases`.
"""

from __future__ import annotations

from hpclz.config.loader import LoadedConfig
from hpclz.state.model import StateDocument

VM_TYPE = "microsoft.compute/virtualmachines"
BASTION_TYPE = "microsoft.network/bastionhosts"


# The local end of the Bastion tunnel to the portal's port 22: beside the CycleCloud server's 8822.
LOCAL_SSH_PORT = 9822


def portal_steps(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    from hpclz.render.portal import HTTPS, LABEL, TUNNEL_PORT
    from hpclz.render.zone import Zone

    portal = loaded.config.portal
    if not portal.enabled:
        return []
    name = Zone(loaded.config).names.name("virtual_machine", LABEL)
    vm = next((r for r in doc.resources if r.type.lower() == VM_TYPE and r.name == name), None)
    if vm is None:
        return []
    steps = [f"Open OnDemand portal: {name}"]
    bastion = next((r for r in doc.resources if r.type.lower() == BASTION_TYPE), None)
    uris = []
    if bastion is not None:
        group = bastion.id.split("/")[4]
        user = loaded.config.identity.admin_username
        steps.append(
            f"Portal, for the cluster admins (the portal takes SSH from Bastion for them only): "
            f"az network bastion tunnel --name {bastion.name} --resource-group {group} "
            f"--target-resource-id {vm.id} --resource-port 22 --port {LOCAL_SSH_PORT}, then "
            f"ssh -N -p {LOCAL_SSH_PORT} -L {TUNNEL_PORT}:localhost:{HTTPS} -i <your private key> {user}@127.0.0.1, "
            f"then open https://localhost:{TUNNEL_PORT} and sign in with Entra ID"
        )
        uris.append(f"https://localhost:{TUNNEL_PORT}/oidc")
    if bastion is not None and not portal.server_name:
        steps.append(
            "Portal users: set portal.server_name and portal.allowed_cidrs for a route over the hub or VPN; "
            "Bastion's tunnel carries SSH only, and only admins may SSH to the portal (docs/portal.md)"
        )
    if portal.server_name:
        steps.append(
            f"Portal over the hub or VPN ({', '.join(map(str, portal.allowed_cidrs)) or 'no range allowed'}): "
            f"https://{portal.server_name}"
        )
        uris.append(f"https://{portal.server_name}/oidc")
    if portal.oidc is not None and uris:
        steps.append(
            f"Portal sign-in: the app registration {portal.oidc.client_id} needs the web redirect URI(s) "
            f"{' '.join(uris)} (docs/portal.md)"
        )
    return steps
