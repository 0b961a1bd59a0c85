"""The Open OnDemand portal (portal.*): one VM in the admin subnet, no public IP, HTTPS only from the private ranges
the config lists, SSH from Bastion.

CCWS builds the same portal as a CycleCloud cluster (Azure/cyclecloud-open-ondemand templates/OpenOnDemand.txt,
release 1.1.6 in CCWS); hpclz renders it as an ARM VM whose boot script does what that project's playbooks do
(specs/default/cluster-init/files/playbooks/ood.yml: Open OnDemand from OSC's repository, a self-signed
certificate, Entra ID through mod_auth_openidc) and what a cyclecloud-slurm login node does to join the cluster
(munge key and slurm.conf from /sched/<cluster>/, Azure/cyclecloud-slurm@b26ab06:slurm/install/install.py).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from hpclz.config.portal import PortalOidc
from hpclz.errors import ExitCode, HpclzError
from hpclz.render.arm import RG_TEMPLATE_SCHEMA
from hpclz.render.cloudinit import (
    PYXIS_PUBLISHED,
    accelerated,
    custom_data,
    login_prefix,
    shared_mounts,
    slurm_cluster_name,
)
from hpclz.render.components import PLATFORM_PATCHING, guest_patch_scope, maintenance_enabled, patch_mode
from hpclz.render.engine import render_text
from hpclz.render.monitoring import vm_agent
from hpclz.render.nsg import DENY_INTERNET_PRIORITY, SRUN_PORT_RANGE
from hpclz.render.roles import entra_login, portal_vault_reader
from hpclz.render.zone import Zone

LABEL = "ood"
HTTPS = 443
# Where the admins reach the portal through Bastion: the local end of `ssh -L 9443:localhost:443` over a tunnel to
# its port 22 (hpclz.deploy.portal_steps); the redirect URI the app registration needs for that path (docs/portal.md).
TUNNEL_PORT = 9443
# ood_portal.yml server_aliases: the host names the tunnel's browser sends (Host: localhost:9443). Open OnDemand 4.1.4
# allows a request's Host only if it is among servername (or, without one, the VM's IPv4 addresses and its FQDN), the
# proxy_server (default: servername or the FQDN) and server_aliases (OSC/ondemand@6b54ef1, tag v4.1.4,
# ood-portal-generator/lib/ood_portal_generator/view.rb l.25-29, l.127-167); that list becomes `SetEnv
# OOD_ALLOWED_HOSTS` (templates/ood-portal.conf.erb l.204-206), the PUN's ALLOWED_HOSTS (nginx_stage/lib/
# nginx_stage.rb l.148) and the dashboard's Rails `config.hosts` (apps/dashboard/config/environments/production.rb
# l.86), and the PUN location keeps the browser's Host (ProxyPreserveHost On, ood-portal.conf.erb l.394). Rails'
# HostAuthorization answers 403 to any other Host, and an allowed name without a port admits it on any port
# (rails/rails@01e6c58 actionpack/lib/action_dispatch/middleware/host_authorization.rb, sanitize_string:
# `\A<host>(?::\d+)?\z`; OOD 4.1.4's dashboard runs Rails 7.1.6, apps/dashboard/Gemfile.lock). "localhost" admits the
# tunnel whatever local port it uses. With a servername the generator also redirects every request whose Host is
# not `<alias>(:443)?` or `<proxy_server>(:443)?` to https://<servername>:443 (ood-portal.conf.erb l.86-92), so the
# tunnel's "localhost:9443" must be an alias in its own right.
TUNNEL_ALIASES = ("localhost", f"localhost:{TUNNEL_PORT}")
# Pinned so a portal built next month matches one built today; change deliberately.
# - Open OnDemand 4.1.4 from OSC's 4.1 apt repository, as CCWS's project pins it
#   (Azure/cyclecloud-open-ondemand@3f0e012:specs/default/cluster-init/files/playbooks/vars.yml `ondemand_version`,
#   Ubuntu/vars.yml `ondemand={{ ondemand_version }}`); 4.2 drops Ubuntu 22.04
#   (OSC/puppet-module-openondemand@069a5d8:manifests/init.pp, "Ubuntu 22.04 is not supported for OnDemand 4.2").
# - The repository URL layout and its signing key's fingerprint: OSC/puppet-module-openondemand@069a5d8:manifests/
#   init.pp (`${repo_baseurl_prefix}/${repo_release}/web/apt`) and @c5ec65a:manifests/repo/apt.pp (key id).
# - Microsoft's package signing key, which signs packages.microsoft.com where cyclecloud-slurm's Slurm builds live
#   (learn.microsoft.com/cli/azure/install-azure-cli-linux, "BC528686B50D79E339D3721CEB3E94ADBE1229CF").
OOD = {
    "release": "4.1",
    "package": "4.1.4",
    "repo": "https://apt.osc.edu/ondemand/4.1/web/apt",
    "key_url": "https://apt.osc.edu/ondemand/DEB-GPG-KEY-ondemand",
    "key_fingerprint": "FE143EA1CB378B569BBF7C544B72FE2B92D31755",
}
# Node.js for Open OnDemand: the ondemand 4.1.4 deb "Depends: ... nodejs (>= 22.0), nodejs (<< 23.0)"
# (OSC/ondemand@6b54ef1, tag v4.1.4, packaging/deb/control:18; 4.0 wanted 20.x, @0a4dda9), and Ubuntu 22.04's own
# nodejs is 12. OSC/ood-ansible adds NodeSource's
# apt repository for it (@7f5c473:tasks/install-package.yml, "install node's apt repo", node_{{ nodejs_version }}.x).
# NodeSource's current layout and key: https://github.com/nodesource/distributions README, installation instructions
# (gpgkey/nodesource-repo.gpg.key, "deb [signed-by=...] https://deb.nodesource.com/node_$NODE_MAJOR.x nodistro main");
# the key's fingerprint as other projects pin it (langgenius/dify api/Dockerfile NODESOURCE_KEY_FPR).
NODESOURCE = {
    "major": "22",
    "repo": "https://deb.nodesource.com/node_22.x",
    "key_url": "https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key",
    "key_fingerprint": "6F71F525282841EEDAF851B42F59B5F99B1BE0B4",
}
MICROSOFT_KEY = {
    "url": "https://packages.microsoft.com/keys/microsoft.asc",
    "fingerprint": "BC528686B50D79E339D3721CEB3E94ADBE1229CF",
}
# cyclecloud-slurm's Slurm packages for Ubuntu 22.04 (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/ubuntu.sh:75).
SLURM_REPO = "https://packages.microsoft.com/repos/slurm-ubuntu-jammy/"
# The uid/gid cyclecloud-slurm gives munge and slurm on every node (install.py defaults), so files on /sched match.
IDS = {"slurm": 11100, "munge": 11101}
# Files cyclecloud-slurm links from /sched/<cluster>/ into /etc/slurm on every node, login nodes included
# (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py, _complete_install_all, l.648-734). Its slurm.conf
# Includes azure.conf, accounting.conf, keep_alive.conf and site_specific.conf (templates/slurm.conf.template
# l.67-77), and a Slurm command stops on an Include it cannot read ("s_p_parse_file: cannot stat file", Slurm 22.05,
# tests/render/test_portal.py). prolog.d and epilog.d are left out: the portal runs no jobs. slurm.conf itself is not
# linked: the portal's own includes the cluster's and adds SrunPortRange (hpclz.render.nsg.SRUN_PORTS).
SLURM_FILES = (
    "azure.conf",
    "keep_alive.conf",
    "accounting.conf",
    "site_specific.conf",
    "gres.conf",
    "cgroup.conf",
    "plugstack.conf",
    "topology.conf",
    # Slurm 25.05+ reads topology.yaml beside slurm.conf before topology.conf, clients included (`scontrol show
    # topology` loads the plugins: SchedMD/slurm slurm-26-05-3-1 src/api/topo_info.c l.77, l.153); hpclz-topology
    # writes it into /sched/<cluster> (hpclz.slurm.topology_yaml). A link to a file not yet written resolves later.
    "topology.yaml",
)


def login_host(zone: Zone) -> str | None:
    """The host name of the cluster's first login node, where the portal's shell app connects; None without login
    nodes (compute.login.count 0).

    CycleCloud names a nodearray's nodes `<nodearray>-<n>` from 1, and cyclecloud-slurm with
    `slurm.node_prefix` set generates "prefix-nodearray-1" (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt
    l.844-852, NodeNamePrefix). With `slurm.use_nodename_as_hostname` a login node renames itself to that prefix
    plus its lowercased node name (azure-slurm-install/install.py l.1027-1039, set_hostname), and its waagent
    publishes the new name to the VNet's DNS (installlib.py l.437-438, l.472-491: Provisioning.MonitorHostName=y,
    waagent restarted), where Azure-provided name resolution answers it for every VM of the VNet
    (learn.microsoft.com/azure/virtual-network/virtual-networks-name-resolution-for-vms-and-role-instances). The
    cluster template sets the prefix to `<cluster>-`, the stock "Cluster Prefix" default.

    With several login nodes Microsoft's portal project also takes the first: `login: host: "{{login_nodes |
    first}}"` (Azure/cyclecloud-open-ondemand@35cf46d:specs/default/cluster-init/files/playbooks/roles/
    register_cluster/templates/slurm_cluster.yml.j2 l.6-7). Its list is the Ready login nodes CycleCloud reports at
    registration; hpclz renders before any node exists, and login-1 is the node the login nodearray always holds
    while compute.login.count is 1 or more (InitialCount = MaxCount = count)."""
    if not zone.config.compute.login.count:
        return None
    return f"{login_prefix(zone)}login-1"


def portal_enabled(zone: Zone) -> bool:
    """Asked for, and standing on what it needs; otherwise HPCLZ-PRT-001/002 have already refused the config."""
    portal = zone.config.portal
    return portal.enabled and portal.oidc is not None and shared_mounts(zone) is not None


def _oidc(zone: Zone) -> PortalOidc:
    oidc = zone.config.portal.oidc
    if oidc is None:
        raise HpclzError(
            "portal.oidc: missing, but the portal needs it (see `hpclz validate`)", exit_code=ExitCode.CONFIG_INVALID
        )
    return oidc


# How cyclecloud-slurm 4.0.9 names a partition's nodes: `<slurm.node_prefix><nodearray>-<i>` for i from 1 to the
# array's MaxCount (Azure/cyclecloud-slurm@50e6739:azure-slurm/slurmcc/partition.py l.193-209,
# _construct_static_node_list), and with slurm.use_nodename_as_hostname the node name is its host name
# (azure-slurm-install/install.py l.104-105, l.1028). hpclz's cluster template names each nodearray after its
# partition and sets no slurm.node_prefix (templates/cyclecloud/slurm-cluster.txt.j2; the stock template's
# "Cluster Prefix" default is not taken), so the prefix is empty; tests/render/test_portal.py fails if the rendered
# template sets one.
NODE_PREFIX = ""
# Open OnDemand's reverse proxy for interactive apps: `<node_uri>/<host>/<port>` and `<rnode_uri>/<host>/<port>`,
# with `<host>` matched by host_regex inside an Apache LocationMatch (OSC/ondemand@6b54ef1, tag v4.1.4,
# ood-portal-generator/templates/ood-portal.conf.erb l.236, l.272; ood_portal_example.yml l.245-264: both URIs are
# off by default and host_regex defaults to '[^/]+', "this allows external hosts as well"). CCWS's portal sets
# node_uri '/node' and rnode_uri '/rnode' (Azure/cyclecloud-open-ondemand@1b2e3e5:specs/default/cluster-init/files/
# playbooks/vars-ood.yml l.16-18).
NODE_URI = "/node"
RNODE_URI = "/rnode"


def node_names(zone: Zone) -> dict[str, list[str]]:
    """Every host name a partition's nodes can have, by partition (what cyclecloud-slurm names them, above)."""
    return {
        p.name: [f"{NODE_PREFIX}{p.name}-{i}" for i in range(1, p.max_nodes + 1)]
        for p in zone.config.compute.partitions
    }


def host_regex(zone: Zone) -> str:
    """ood_portal.yml host_regex: the partitions' node names and nothing else (no login node, no scheduler, no
    other host, no domain). The index is bounded by the digits of the largest max_nodes; the proxy reaches only
    hosts that resolve in the VNet, and no node past an array's MaxCount exists."""
    partitions = zone.config.compute.partitions
    # Sorted: reordering compute.partitions changes nothing here.
    names = "|".join(sorted(re.escape(f"{NODE_PREFIX}{p.name}") for p in partitions))
    digits = len(str(max(p.max_nodes for p in partitions)))
    return f"(?:{names})-[1-9][0-9]{{0,{digits - 1}}}"


def proxy_user_data(zone: Zone) -> str:
    """The portal VM's userData: the interactive-app proxy settings, which follow the partitions and so must change
    in place (userData: learn.microsoft.com/azure/virtual-machines/user-data), where the boot script cannot;
    hpclz-portal-proxy (templates/cloud-init/portal_proxy.py) applies them."""
    document = {
        "kind": "hpclz-portal-proxy",
        "host_regex": host_regex(zone),
        "node_uri": NODE_URI,
        "rnode_uri": RNODE_URI,
    }
    return base64.b64encode(json.dumps(document, sort_keys=True).encode()).decode()


def _lua_domain(domain: str) -> str:
    """A Lua pattern matching `domain` in any letter case: each letter as `[xX]`, `.` and `-` escaped with `%`.

    A Lua pattern is not a regular expression: `%` escapes, a backslash is an ordinary character, and `-` is a lazy
    repetition (Lua 5.3 reference manual, 6.4.1 Patterns, www.lua.org/manual/5.3/manual.html#6.4.1). user_domain
    holds only letters, digits, dots and hyphens (hpclz.config.portal.PortalOidc). A UPN's suffix may carry capitals
    (`John.Smith@Contoso.com`), and Entra ID compares it without regard to case."""
    out = []
    for char in domain:
        if char.isalpha():
            out.append(f"[{char.lower()}{char.upper()}]")
        elif char in ".-":
            out.append(f"%{char}")
        else:
            out.append(char)
    return "".join(out)


def _user_map(oidc: PortalOidc) -> str | None:
    """ood_portal.yml user_map_match: `user@domain` -> `user`, lower-cased; None keeps the claim.

    Open OnDemand 4.1.4 matches it with Lua's string.match, "Lua regular expression" (OSC/ondemand@6b54ef1, tag v4.1.4,
    ood-portal-generator/share/ood_portal_example.yml l.142-147; mod_ood_proxy/lib/ood/user_map.lua, map), so the
    domain is a Lua pattern (_lua_domain): a Python-escaped `contoso\\.com` would ask for a backslash no UPN holds and
    map nobody. A `:lower` suffix makes it lower-case the captured name (user_map.lua: "if match string ends in :lower,
    lowercase the username"). CycleCloud names a user's account on the nodes after the Entra ID user
    (learn.microsoft.com/azure/cyclecloud/how-to/ccws/open-ondemand-add-users: "a local user account managed by
    CycleCloud created with the same name as the Microsoft Entra ID user") and documents no rule for the case of that
    name; hpclz-portal-users names each portal account after its home directory in lower case
    (templates/cloud-init/portal_users.py), and this map lower-cases the UPN's user part, so `John.Smith@contoso.com`
    is the portal's `john.smith` whether CycleCloud made `/shared/home/John.Smith` or `/shared/home/john.smith`: the
    same UID and home as on the nodes, which is what Slurm and the files go by. CCWS's own portal maps the user part
    unchanged (Azure/cyclecloud-open-ondemand@35cf46d vars-entra.yml l.36)."""
    return f"^([^@]+)@{_lua_domain(oidc.user_domain)}$:lower" if oidc.user_domain else None


def portal_script(zone: Zone) -> str:
    portal = zone.config.portal
    shared = shared_mounts(zone)
    if shared is None:
        raise HpclzError(
            "portal.enabled: the portal needs storage.shared for /home and /sched (see `hpclz validate`)",
            exit_code=ExitCode.CONFIG_INVALID,
        )
    oidc = _oidc(zone)
    secret = None
    if oidc.client_secret_name:
        secret = {"vault": zone.key_vault_name, "name": oidc.client_secret_name}
    hosts = [f"localhost:{TUNNEL_PORT}"] + ([portal.server_name] if portal.server_name else [])
    return render_text(
        "cloud-init/portal.sh.j2",
        shared=shared,
        cluster=slurm_cluster_name(zone),
        slurm_version=zone.config.compute.cyclecloud.slurm_version,
        # CycleCloud's base home directory on the shared file system: <mount_point>/home, as /shared/home is in
        # cyclecloud-slurm's stock layout (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt:601).
        users_home=f"{shared['mount_point'].rstrip('/')}/home",
        slurm_repo=SLURM_REPO,
        slurm_files=SLURM_FILES,
        ids=IDS,
        ood=OOD,
        nodesource=NODESOURCE,
        microsoft_key=MICROSOFT_KEY,
        oidc=oidc,
        user_map=_user_map(oidc),
        secret=secret,
        server_name=portal.server_name,
        certificate_name=portal.server_name or "localhost",
        logout_host=hosts[-1],
        tunnel_aliases=TUNNEL_ALIASES,
        login_host=login_host(zone),
        srun_ports=SRUN_PORT_RANGE,
        # The plugstack lines a login node publishes beside the plugin (templates/cloud-init/_pyxis_publish.sh.j2).
        pyxis_conf=f"/sched/{slurm_cluster_name(zone)}/{PYXIS_PUBLISHED.rsplit('/', 1)[0]}/*.conf",
    )


def slurm_sources(zone: Zone) -> list[str]:
    """Where the daemons that call srun back run: slurmctld on the scheduler (admin subnet) and slurmstepd on the
    partitions' nodes (compute subnet), as the cluster template places them (SubnetId = $AdminSubnetId on the
    scheduler, $ComputeSubnetId on every nodearray by default). Steps 1b-8 of srun's sequence
    (slurm.schedmd.com/network.html, "srun communication"): slurmctld answers and pings srun, slurmstepd
    "connects I/O" and "notifies srun" on task termination."""
    return [str(zone.subnet("admin").cidr), str(zone.subnet("compute").cidr)]


def security_rules(zone: Zone) -> list[dict[str, Any]]:
    """HTTPS from the listed private ranges, SSH from Bastion only, srun's and salloc's ports from the cluster's
    subnets, nothing else inbound: the NIC's NSG, on top of the admin subnet's (which allows the whole VNet).
    Connections the portal opens (to slurmctld, slurmd, the login node's SSH, an app on a compute node) need nothing
    here: an NSG is stateful, "you only need a rule in one direction" (learn.microsoft.com/azure/virtual-network/
    network-security-groups-overview, Security rules).

    No HTTPS from the Bastion subnet: Bastion's tunnel carries SSH or RDP only ("The bastion tunnel doesn't relay web
    servers or hosts.": MicrosoftDocs/azure-docs@b8db86a includes/bastion-native-connect-tunnel.md l.11), so admins
    reach 443 through `ssh -L` over the tunnel to port 22 (hpclz.deploy.portal_steps), which arrives from the VM
    itself, and users from portal.allowed_cidrs."""
    rules: list[dict[str, Any]] = []
    sources = [str(c) for c in zone.config.portal.allowed_cidrs]
    if sources:
        rules.append(_allow("AllowPortalHttps", 100, sources, str(HTTPS), "hpclz: portal.allowed_cidrs"))
    network = zone.config.network
    if network.bastion.enabled and network.vnet.subnets.bastion is not None:
        rules.append(
            _allow("AllowBastionSsh", 110, [str(zone.subnet("bastion").cidr)], "22", "hpclz: admin SSH via Bastion")
        )
    rules.append(
        _allow(
            "AllowSlurmToSrun",
            120,
            slurm_sources(zone),
            SRUN_PORT_RANGE,
            "hpclz: slurmctld (admin subnet) and slurmstepd (compute subnet) call srun and salloc back",
        )
    )
    rules.append(
        {
            "name": "DenyAllInbound",
            "properties": {
                "priority": DENY_INTERNET_PRIORITY,
                "direction": "Inbound",
                "access": "Deny",
                "protocol": "*",
                "sourceAddressPrefix": "*",
                "sourcePortRange": "*",
                "destinationAddressPrefix": "*",
                "destinationPortRange": "*",
                "description": "hpclz: the portal takes nothing else, not even from the rest of the VNet",
            },
        }
    )
    return rules


def _allow(name: str, priority: int, sources: list[str], port: str, description: str) -> dict[str, Any]:
    props: dict[str, Any] = {
        "priority": priority,
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "sourcePortRange": "*",
        "destinationAddressPrefix": "*",
        "destinationPortRange": port,
        "description": description,
    }
    if len(sources) == 1:
        props["sourceAddressPrefix"] = sources[0]
    else:
        props["sourceAddressPrefixes"] = sources
    return {"name": name, "properties": props}


def portal(zone: Zone) -> dict[str, Any]:
    config = zone.config
    publisher, offer, sku, version = config.portal.image.split(":")
    image = {"publisher": publisher, "offer": offer, "sku": sku, "version": version}
    patching = patch_mode(zone, image)
    vm_name = zone.names.name("virtual_machine", LABEL)
    script = portal_script(zone)
    agent = vm_agent(zone)
    if agent is not None:
        # The portal has only its own (system-assigned) identity; with none named the agent signs in with it.
        agent = {**agent, "identity": None}
    vm = {
        "name": vm_name,
        "computer_name": f"{config.metadata.name}-ood",
        "nic": zone.names.name("network_interface", LABEL),
        "nsg": zone.names.name("network_security_group", LABEL),
        "image": image,
        "custom_data": custom_data(script, "portal: the portal's boot script"),
        "user_data": proxy_user_data(zone),
        "accelerated": accelerated(zone, config.portal.vm_size),
        # Same as the CycleCloud server: the VM login roles need the Entra ID SSH extension and a system identity,
        # and identity.entra_login turns both off together.
        "entra_ssh": entra_login(zone),
        "agent": agent,
        # A service VM like the CycleCloud server: its zone (compute.service_zone) and its guest patches inside the
        # maintenance window (InGuestPatch assignment, learn.microsoft.com/azure/virtual-machines/maintenance-configurations)
        # where Azure patches its image (the default Canonical 0001-com-ubuntu-server-jammy 22_04-lts-gen2 is listed).
        "zone": config.compute.service_zone,
        "patch_mode": patching,
        "maintenance_configuration": zone.names.name("maintenance_configuration")
        if maintenance_enabled(zone) and (patching == PLATFORM_PATCHING or not guest_patch_scope(zone))
        else None,
    }
    return {
        "vm": vm,
        "nsg_rules": security_rules(zone),
        "vault_reader": portal_vault_reader(zone, vm_name),
        "artifacts": {"cloud-init/portal.sh": script},
        "parameters": {"portalVmSize": config.portal.vm_size},
        "rg_schema": RG_TEMPLATE_SCHEMA,
    }
