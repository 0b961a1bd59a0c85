"""Next steps for the Open OnDemand portal: how to reach it, and the redirect URIs its app registration needs.

The portal listens on HTTPS 443 with no public IP (hpclz.render.portal); Bastion's native client forwards a local
port to it (`az network bastion tunnel`, learn.microsoft.com/cli/azure/network/bastion, as CCWS's
util/tunnel_thru_bastion.sh does for its portal). The local port differs from the CycleCloud UI's, so both tunnels
can run at once.
"""

from __future__ import annotations

from hpclz.config.loader import LoadedConfig
from hpclz.state.model import StateDocument

VM_TYPE = "microsoft.compute/virtualmachines"
BASTION_TYPE = "microsoft.network/bastionhosts"


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
        steps.append(
            f"Portal: az network bastion tunnel --name {bastion.name} --resource-group {group} "
            f"--target-resource-id {vm.id} --resource-port {HTTPS} --port {TUNNEL_PORT}, "
            f"then open https://localhost:{TUNNEL_PORT} and sign in with Entra ID"
        )
        uris.append(f"https://localhost:{TUNNEL_PORT}/oidc")
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
