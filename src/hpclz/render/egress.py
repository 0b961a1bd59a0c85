"""What the zone's VMs fetch from outside it, derived from the rendered artefacts: the hub firewall's allow-list.

A zone without a NAT gateway sends 0.0.0.0/0 to the hub's Azure Firewall (network.hub_peering.firewall_private_ip),
which denies by default. `DESTINATIONS` is the one table of every host a VM of the zone reaches at boot or at run
time, per VM role, with the reason and its source. `allow_list(plan)` keeps the rows the rendered plan uses: a row is
used when its `trigger` (by default its own host) appears in an artefact of its role, so the list follows what is
rendered. A row a private endpoint of the zone serves (its private DNS zone and a private endpoint of that kind
are in the plan) stays in the table but is marked in-zone: its traffic never reaches the hub. tests/render/
test_egress.py renders every preset and fails on a host no row names, or a row nothing rendered uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hpclz.arm.walk import iter_resources
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.render.server_programs import server_programs

EGRESS_JSON = "egress.json"
EGRESS_MD = "egress.md"

CYCLECLOUD = "cyclecloud"  # the CycleCloud server VM
NODES = "nodes"  # scheduler, login and partition nodes, created by CycleCloud
PORTAL = "portal"  # the Open OnDemand VM
ROLES = (CYCLECLOUD, NODES, PORTAL)
SERVER_CONFIG = "cloud-init/cyclecloud-server.yaml"  # the CycleCloud server's customData, as render writes it

# CycleCloud's own outbound needs: MicrosoftDocs/azure-docs@0aa710a articles/cyclecloud/how-to/
# running-in-locked-down-network.md l.15-23 (HTTPS to these hosts), l.31 and l.49-54 (Azure Storage; service tags
# Storage, AzureActiveDirectory, AzureMonitor, AzureResourceManager), l.83-85 (every cluster node reaches Azure
# Storage), l.88-97 (projects downloaded from GitHub while staging).
LOCKED_DOWN = "learn.microsoft.com/azure/cyclecloud/how-to/running-in-locked-down-network (azure-docs@0aa710a l.15-23)"
LOCKED_DOWN_GITHUB = (
    "learn.microsoft.com/azure/cyclecloud/how-to/running-in-locked-down-network, Project Updates from GitHub "
    "(azure-docs@0aa710a l.88-97)"
)
LOCKED_DOWN_STORAGE = (
    "learn.microsoft.com/azure/cyclecloud/how-to/running-in-locked-down-network (azure-docs@0aa710a l.31, l.49-54, "
    "l.83-85: CycleCloud and every cluster node reach Azure Storage)"
)
# Ubuntu on Azure takes packages from Canonical's Azure mirror and security pocket over HTTP:
# learn.microsoft.com/azure/aks/outbound-rules-control-egress, "Optional recommended FQDN / application rules"
# (security.ubuntu.com, azure.archive.ubuntu.com on HTTP:80 for Linux node patches and packages).
UBUNTU_ON_AZURE = "learn.microsoft.com/azure/aks/outbound-rules-control-egress (Ubuntu's Azure mirror, HTTP:80)"
# A GitHub release download answers 302 to its asset host (docs.github.com/en/rest/releases/assets, "Get a release
# asset": 302 Found with the browser_download_url); the asset host is release-assets.githubusercontent.com.
GITHUB_RELEASE = r"https://github\.com/[\w.-]+/[\w.-]+/releases/"
# cyclecloud-slurm 4.0.9 adds Microsoft's Slurm repository on every Ubuntu node and installs slurm-smd-* from it
# (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/ubuntu.sh l.94-104).
CYCLECLOUD_SLURM_APT = "Azure/cyclecloud-slurm@50e6739 (4.0.9) azure-slurm-install/ubuntu.sh l.94-104"
# The slurm specs name the project hpclz-cluster-sync uploads, without the cyclecloud/ prefix (render/cloudinit.py).
SLURM_PROJECT = r"\[\[\[cluster-init slurm:"
# CycleCloud's healthagent spec pip-installs its sdist on every node, so its build backend and dependencies come from
# the package index (Azure/cyclecloud-healthagent@b8c76db, 2.0.2: specs/default/cluster-init/scripts/
# setup-healthagent.sh l.127; pyproject.toml l.2-9: setuptools, dbus-next, systemd-python, pyyaml, pydantic), and
# apt-installs DCGM 4 on GPU nodes (l.166-168). Which healthagent CycleCloud 8.9.1 bundles is not verified here.
HEALTHAGENT = r"\[\[\[cluster-init cyclecloud/healthagent:"
HEALTHAGENT_PIP = "Azure/cyclecloud-healthagent@b8c76db (2.0.2) setup-healthagent.sh l.127, pyproject.toml l.2-9"
# The scheduler's hpclz-install-wheel installs hpclz's dependencies from the index too, only the files the wheel's
# hash-pinned lock names (templates/cloud-init/install_wheel.sh.j2): used wherever the cluster template carries it.
HPCLZ_LOCK = r"--require-hashes --no-deps --only-binary :all: -r \"\$lock\""
PYPI_USERS = f"{HEALTHAGENT}|{HPCLZ_LOCK}"
HPCLZ_LOCK_PIP = (
    "hpclz-install-wheel (templates/cloud-init/install_wheel.sh.j2): pip install --require-hashes -r the wheel's lock"
)

# VM extensions the plan installs fetch on their own: role_texts adds "vm-extension:<type>" to the role of the VM.
AAD_LOGIN = "vm-extension:AADSSHLoginForLinux"
AMA = "vm-extension:AzureMonitorLinuxAgent"
# learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux, "Meet requirements ... Network"
# (MicrosoftDocs/entra-docs@07cd7ac docs/identity/devices/howto-vm-sign-in-azure-ad-linux.md): packages.microsoft.com,
# login.microsoftonline.com and pas.windows.net over TCP 443.
AAD_LOGIN_NETWORK = "learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux (Network)"
# learn.microsoft.com/azure/azure-monitor/agents/azure-monitor-agent-requirements, "Networking": the Azure Resource
# Manager service tag and global.handler.control.monitor.azure.com, <region>.handler.control.monitor.azure.com,
# <workspace-id>.ods.opinsights.azure.com over HTTPS.
AMA_NETWORK = "learn.microsoft.com/azure/azure-monitor/agents/azure-monitor-agent-requirements (Networking)"
EXTENSION_ROLE = {"compute": CYCLECLOUD, "portal": PORTAL}  # the deployment that creates the role's VM


@dataclass(frozen=True)
class Destination:
    """One host a VM role reaches. `trigger`: a pattern in that role's artefacts that shows the row is used (by
    default the host itself, for a host the artefacts name). `service_tag`: the Azure service tag a network rule can
    allow instead. `private_dns_zone`/`private_group`: the private endpoint that serves it inside the zone."""

    host: str
    role: str
    reason: str
    source: str
    protocol: str = "Https"
    port: int = 443
    trigger: str | None = None
    service_tag: str | None = None
    private_dns_zone: str | None = None
    private_group: str | None = None

    def matches(self, host: str) -> bool:
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and host != self.host[2:]
        return host == self.host

    def used_in(self, text: str, hosts: set[str] | None = None) -> bool:
        """`hosts`: those of `text` (hosts_in), when the caller has them already."""
        if self.trigger is not None:
            return re.search(self.trigger, text) is not None
        return any(self.matches(host) for host in (hosts_in(text) if hosts is None else hosts))


def _cc(host: str, reason: str, tag: str | None = None) -> Destination:
    return Destination(host, CYCLECLOUD, reason, LOCKED_DOWN, trigger="cyclecloud initialize", service_tag=tag)


def _extension_rows(role: str) -> tuple[Destination, ...]:
    ama = "the Azure Monitor agent's"
    return (
        Destination(
            "pas.windows.net", role, "Entra ID sign-in's Azure RBAC flows", AAD_LOGIN_NETWORK, trigger=AAD_LOGIN
        ),
        Destination(
            "global.handler.control.monitor.azure.com",
            role,
            f"{ama} configuration service",
            AMA_NETWORK,
            trigger=AMA,
            service_tag="AzureMonitor",
        ),
        Destination(
            "*.handler.control.monitor.azure.com",
            role,
            f"{ama} regional configuration service",
            AMA_NETWORK,
            trigger=AMA,
            service_tag="AzureMonitor",
        ),
        Destination(
            "*.ods.opinsights.azure.com",
            role,
            f"{ama} upload to the Log Analytics workspace",
            AMA_NETWORK,
            trigger=AMA,
            service_tag="AzureMonitor",
        ),
    )


DESTINATIONS: tuple[Destination, ...] = (
    _cc("management.azure.com", "CycleCloud orchestrates VMs through Azure Resource Manager", "AzureResourceManager"),
    _cc("login.microsoftonline.com", "CycleCloud's managed-identity and Entra ID sign-in", "AzureActiveDirectory"),
    _cc("watson.telemetry.microsoft.com", "CycleCloud telemetry"),
    _cc("dc.applicationinsights.azure.com", "CycleCloud Application Insights", "AzureMonitor"),
    _cc("dc.applicationinsights.microsoft.com", "CycleCloud Application Insights", "AzureMonitor"),
    _cc("dc.services.visualstudio.com", "CycleCloud Application Insights", "AzureMonitor"),
    _cc("ratecard.azure-api.net", "CycleCloud's price data"),
    Destination(
        "packages.microsoft.com",
        CYCLECLOUD,
        "the Entra ID sign-in extension installs its aadsshlogin packages",
        AAD_LOGIN_NETWORK,
        trigger=AAD_LOGIN,
    ),
    Destination(
        "packages.microsoft.com",
        CYCLECLOUD,
        "hpclz-cluster-sync upgrades the cyclecloud8 package in place when userData names a newer CycleCloud release",
        "learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate (yum -y upgrade cyclecloud8); "
        "how-to/install-manual (baseurl https://packages.microsoft.com/yumrepos/cyclecloud)",
        trigger=r"packages\.microsoft\.com/yumrepos/cyclecloud",
    ),
    *_extension_rows(CYCLECLOUD),
    Destination(
        "github.com",
        CYCLECLOUD,
        "hpclz-cluster-sync runs `cyclecloud project fetch` on the cyclecloud-slurm release the userData names "
        "(`project`), then uploads it to the locker",
        LOCKED_DOWN_GITHUB,
    ),
    Destination(
        "release-assets.githubusercontent.com",
        CYCLECLOUD,
        "GitHub release downloads redirect to their asset host",
        "docs.github.com/en/rest/releases/assets (302 to the asset's download URL)",
        trigger=GITHUB_RELEASE,
    ),
    Destination(
        "*.blob.core.windows.net",
        CYCLECLOUD,
        "the CycleCloud locker (cluster projects and node payloads)",
        LOCKED_DOWN_STORAGE,
        trigger="cyclecloud initialize",
        service_tag="Storage",
        private_dns_zone="privatelink.blob.core.windows.net",
        private_group="blob",
    ),
    Destination(
        "*.vault.azure.net",
        CYCLECLOUD,
        "hpclz-cluster-sync reads the cluster's secrets from Key Vault",
        "learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret (https://{vault}.vault.azure.net)",
        service_tag="AzureKeyVault",
        private_dns_zone="privatelink.vaultcore.azure.net",
        private_group="vault",
    ),
    Destination(
        "*.vault.azure.net",
        NODES,
        "hpclz-job-storage reads the secrets the compute identity is granted, for each job (docs/checkpoints.md)",
        "learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret (https://{vault}.vault.azure.net)",
        service_tag="AzureKeyVault",
        private_dns_zone="privatelink.vaultcore.azure.net",
        private_group="vault",
    ),
    Destination(
        "*.blob.core.windows.net",
        NODES,
        "cluster-init payloads from the locker; hpclz-locker-get and checkpoints in Blob storage",
        LOCKED_DOWN_STORAGE,
        service_tag="Storage",
        private_dns_zone="privatelink.blob.core.windows.net",
        private_group="blob",
    ),
    Destination(
        "management.azure.com",
        NODES,
        "hpclz-arm-get and hpclz-prometheus-url read the zone's resources through Azure Resource Manager",
        "learn.microsoft.com/rest/api/azure (https://management.azure.com)",
        service_tag="AzureResourceManager",
    ),
    Destination(
        "*.metrics.ingest.monitor.azure.com",
        NODES,
        "hpclz-metrics remote-writes to the zone's Azure Monitor workspace (its data collection endpoint, read at boot)",
        "learn.microsoft.com/azure/azure-monitor/essentials/data-collection-endpoint-overview (metrics ingestion "
        "endpoint <dce>.<region>-1.metrics.ingest.monitor.azure.com)",
        trigger=r"remote_write:",
        service_tag="AzureMonitor",
    ),
    Destination(
        "github.com",
        NODES,
        "hpclz-metrics fetches the Prometheus and node_exporter releases (SHA-256 checked)",
        "github.com/prometheus/prometheus/releases, github.com/prometheus/node_exporter/releases",
    ),
    Destination(
        "release-assets.githubusercontent.com",
        NODES,
        "GitHub release downloads redirect to their asset host",
        "docs.github.com/en/rest/releases/assets (302 to the asset's download URL)",
        trigger=GITHUB_RELEASE,
    ),
    Destination(
        "packages.microsoft.com",
        NODES,
        "cyclecloud-slurm installs Slurm (slurm-smd-*) from Microsoft's repository",
        CYCLECLOUD_SLURM_APT,
        trigger=SLURM_PROJECT,
    ),
    Destination(
        "pypi.org",
        NODES,
        "healthagent's pip install resolves its build backend and dependencies from PyPI's index; the scheduler's "
        "hpclz-install-wheel takes hpclz's locked dependencies from it",
        HEALTHAGENT_PIP
        + "; "
        + HPCLZ_LOCK_PIP
        + "; pip's default index https://pypi.org/simple (pip.pypa.io/en/stable/cli/pip_install)",
        trigger=PYPI_USERS,
    ),
    Destination(
        "files.pythonhosted.org",
        NODES,
        "the files PyPI's index links to",
        HEALTHAGENT_PIP
        + "; "
        + HPCLZ_LOCK_PIP
        + "; docs.pypi.org/api (distribution files are served from files.pythonhosted.org)",
        trigger=PYPI_USERS,
    ),
    Destination(
        "developer.download.nvidia.com",
        NODES,
        "the image's CUDA repository: DCGM 4 for healthagent on GPU nodes, and every `apt update`",
        "Azure/cyclecloud-healthagent@b8c76db setup-healthagent.sh l.166-168; Azure/azhpc-images@8e9d055f "
        "components/install_nvidiagpudriver.sh l.51 (cuda-keyring)",
        trigger=HEALTHAGENT,
    ),
    Destination(
        "azure.archive.ubuntu.com",
        NODES,
        "apt-get installs from the Ubuntu-HPC image's own sources",
        UBUNTU_ON_AZURE,
        protocol="Http",
        port=80,
        trigger=r"apt-get (?:update|install)",
    ),
    Destination(
        "security.ubuntu.com",
        NODES,
        "apt-get installs from the Ubuntu-HPC image's own sources (security pocket)",
        UBUNTU_ON_AZURE,
        protocol="Http",
        port=80,
        trigger=r"apt-get (?:update|install)",
    ),
    Destination(
        "packages.microsoft.com",
        PORTAL,
        "the cluster's Slurm client (slurm-smd-client) from Microsoft's repository, and Microsoft's signing key; the "
        "Entra ID sign-in extension's aadsshlogin packages",
        "Azure/cyclecloud-slurm@50e6739 azure-slurm-install/ubuntu.sh l.75 (render/portal.py SLURM_REPO); "
        + AAD_LOGIN_NETWORK,
        trigger=rf"packages\.microsoft\.com|{AAD_LOGIN}",
    ),
    Destination(
        "deb.nodesource.com",
        PORTAL,
        "Node.js 22 for Open OnDemand 4.x",
        "osc.github.io/ood-documentation/latest/installation/install-software.html (render/portal.py NODESOURCE)",
    ),
    Destination(
        "apt.osc.edu",
        PORTAL,
        "the Open OnDemand package repository and its signing key",
        "osc.github.io/ood-documentation/latest/installation/install-software.html",
    ),
    Destination(
        "login.microsoftonline.com",
        PORTAL,
        "Open OnDemand's Entra ID sign-in (OpenID Connect metadata and tokens); SSH sign-in with Entra ID",
        "learn.microsoft.com/entra/identity-platform/v2-protocols-oidc (OpenID configuration document); "
        + AAD_LOGIN_NETWORK,
        trigger=rf"login\.microsoftonline\.com|{AAD_LOGIN}",
        service_tag="AzureActiveDirectory",
    ),
    Destination(
        "azure.archive.ubuntu.com",
        PORTAL,
        "apt-get installs from the image's own sources",
        UBUNTU_ON_AZURE,
        protocol="Http",
        port=80,
        trigger=r"apt-get (?:update|install)",
    ),
    Destination(
        "security.ubuntu.com",
        PORTAL,
        "apt-get installs from the image's own sources (security pocket)",
        UBUNTU_ON_AZURE,
        protocol="Http",
        port=80,
        trigger=r"apt-get (?:update|install)",
    ),
    *_extension_rows(PORTAL),
    # The CycleCloud server has its own Azure Resource Manager row, which the agent's need adds nothing to.
    Destination(
        "management.azure.com",
        PORTAL,
        "the Azure Monitor agent needs the Azure Resource Manager service tag",
        AMA_NETWORK,
        trigger=AMA,
        service_tag="AzureResourceManager",
    ),
)

# Hosts the artefacts name that no VM reaches through the network, each with why.
NOT_EGRESS: dict[str, str] = {
    # learn.microsoft.com/azure/virtual-machines/instance-metadata-service: "a non-routable IP address", reachable
    # "only from within the VM".
    "169.254.169.254": "the instance metadata service: link-local, answered on the host",
    "localhost": "the VM itself",
    # Token audiences passed to IMDS as `resource` (learn.microsoft.com/entra/identity/managed-identities-azure-
    # resources/how-to-use-vm-token: "resource: The App ID URI of the target resource"): names, never contacted.
    "storage.azure.com": "token audience for Azure Storage, sent to IMDS",
    "vault.azure.net": "token audience for Key Vault, sent to IMDS",
}

URL = re.compile(r"\b(?:https?|git)://([A-Za-z0-9{}$_.-]+)")
PLACEHOLDER = re.compile(r"\{\w+\}|\$\{?\w+\}?")
COMMENT = re.compile(r"(?:^|\s)#(?![!{]).*$", re.M)
DOCSTRING = re.compile(r'"""(?:.|\n)*?"""')


def hosts_in(text: str) -> set[str]:
    """Host names of the URLs in `text`, placeholders (`{account}`, `${host}`) read as one label: `{account}.blob.
    core.windows.net` is a host of `*.blob.core.windows.net`."""
    return {PLACEHOLDER.sub("x", match.group(1)).lower().rstrip(".") for match in URL.finditer(text)}


def _code(text: str) -> str:
    """The text without shell and Python comments or Python docstrings: the links a comment cites are not fetched."""
    return COMMENT.sub("", DOCSTRING.sub("", text))


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


# A cloud-config line whose value is one double-quoted scalar: render writes embedded files that way, JSON-escaped.
QUOTED_VALUE = re.compile(r'^\s*(?:-\s+)?[\w-]+:\s*("(?:[^"\\]|\\.)*")\s*$')


def _cloud_config_pieces(text: str) -> Iterator[str]:
    """A cloud-config's lines, each quoted value decoded into the file it holds. Read line by line rather than parsed
    as YAML: ruamel's pure-Python loader took about half a second for one CycleCloud cloud-config. A value that is not
    JSON-escaped stays as written and is still scanned."""
    for line in text.splitlines():
        match = QUOTED_VALUE.match(line)
        if match:
            try:
                yield str(json.loads(match.group(1)))
                continue
            except ValueError:
                pass
        yield line


def _role_of(name: str) -> str | None:
    """The VM role that runs (or, for CycleCloud's own inputs, reads) an artefact; None for what no VM reads."""
    if name.startswith("grafana/"):
        return None  # dashboards imported into Azure Managed Grafana by the deployment, not fetched by a VM
    if name == "cyclecloud/slurm-cluster.txt":
        return NODES
    if name.startswith("cloud-init/portal"):
        return PORTAL
    return CYCLECLOUD


def _pieces(name: str, text: str) -> Iterator[tuple[str, str]]:
    """(role, text) of one artefact, its embedded files decoded: a cloud-config's write_files, a JSON's strings. The
    CycleCloud userData carries the cluster template, which runs on the nodes, and names the project CycleCloud
    stages."""
    role = _role_of(name)
    if role is None:
        return
    if name.endswith(".yaml"):
        yield role, "\n".join(_code(piece) for piece in _cloud_config_pieces(text))
    elif name.endswith(".json"):
        document = json.loads(text)
        for key, value in document.items() if isinstance(document, dict) else []:
            yield (NODES if key == "template" else role), "\n".join(_code(s) for s in _strings(value))
    else:
        yield role, _code(text)


def role_texts(plan: DeploymentPlan) -> dict[str, str]:
    """Every role's artefacts as one text, comments and docstrings left out."""
    texts: dict[str, list[str]] = {role: [] for role in ROLES}
    for deployment in plan.deployments:
        for name, text in sorted(deployment.artifacts.items()):
            for role, piece in _pieces(name, text):
                texts[role].append(piece)
        if SERVER_CONFIG in deployment.artifacts:
            # What the server runs from the hpclz wheel, not from its customData (hpclz.render.server_programs).
            texts[CYCLECLOUD] += [_code(text) for text in server_programs().values()]
        if deployment.component in EXTENSION_ROLE:
            texts[EXTENSION_ROLE[deployment.component]] += _extensions(deployment)
    return {role: "\n".join(parts) for role, parts in texts.items()}


def _extensions(deployment: Deployment) -> list[str]:
    """A "vm-extension:<type>" marker for each VM extension the deployment installs."""
    return [
        f"vm-extension:{found.resource.get('properties', {}).get('type')}"
        for found in iter_resources(deployment.template.get("resources"))
        if found.type.lower() == "microsoft.compute/virtualmachines/extensions"
    ]


def named_hosts(plan: DeploymentPlan) -> dict[str, set[str]]:
    """Per role, every host its artefacts name that may leave the VM (NOT_EGRESS left out)."""
    return {role: {h for h in hosts_in(text) if h not in NOT_EGRESS} for role, text in role_texts(plan).items()}


def _private_groups(plan: DeploymentPlan) -> set[tuple[str, str]]:
    """(private DNS zone, group) pairs the plan serves inside the zone: a private endpoint of the group and the DNS
    zone that resolves the service's names to it."""
    zones: set[str] = set()
    groups: set[str] = set()
    for deployment in plan.deployments:
        for found in iter_resources(deployment.template.get("resources")):
            if found.type.lower() == "microsoft.network/privatednszones":
                zones.add(str(found.resource.get("name", "")))
            elif found.type.lower() == "microsoft.network/privateendpoints":
                for connection in found.resource.get("properties", {}).get("privateLinkServiceConnections", []):
                    groups.update(connection.get("properties", {}).get("groupIds", []))
    return {(zone, group) for zone in zones for group in groups}


@dataclass(frozen=True)
class Allowed:
    """A row of the derived allow-list: `in_zone` when a private endpoint of the zone serves it."""

    destination: Destination
    in_zone: bool

    def as_json(self) -> dict[str, Any]:
        d = self.destination
        return {
            "host": d.host,
            "role": d.role,
            "protocol": d.protocol,
            "port": d.port,
            "service_tag": d.service_tag,
            "in_zone": self.in_zone,
            "reason": d.reason,
            "source": d.source,
        }


def allow_list(plan: DeploymentPlan) -> list[Allowed]:
    """The rows of DESTINATIONS the rendered plan uses, in table order."""
    texts = role_texts(plan)
    hosts = {role: hosts_in(text) for role, text in texts.items()}
    private = _private_groups(plan)
    rows = []
    for d in DESTINATIONS:
        if d.used_in(texts[d.role], hosts[d.role]):
            in_zone = (d.private_dns_zone, d.private_group) in private
            rows.append(Allowed(d, in_zone))
    return rows


def through_hub(rows: Iterable[Allowed]) -> list[Allowed]:
    return [row for row in rows if not row.in_zone]


def egress_json(plan: DeploymentPlan, rows: list[Allowed] | None = None) -> dict[str, Any]:
    rows = allow_list(plan) if rows is None else rows
    return {
        "landing_zone": plan.landing_zone,
        "environment": plan.environment,
        "destinations": [row.as_json() for row in rows],
        "hub_must_allow": sorted(
            {f"{r.destination.protocol}:{r.destination.port} {r.destination.host}" for r in through_hub(rows)}
        ),
    }


def egress_markdown(plan: DeploymentPlan, rows: list[Allowed] | None = None) -> str:
    rows = allow_list(plan) if rows is None else rows
    lines = [
        f"# Egress of {plan.landing_zone} ({plan.environment})",
        "",
        "Every host a VM of this zone reaches outside it, derived from the rendered artefacts (hpclz.render.egress).",
        "A zone without a NAT gateway routes these through the hub's firewall, which must allow them; rows served by a",
        "private endpoint of the zone stay inside it.",
        "",
        "| role | host | protocol:port | service tag | path | reason | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        d = row.destination
        path = "private endpoint in the zone" if row.in_zone else "outbound"
        lines.append(
            f"| {d.role} | `{d.host}` | {d.protocol}:{d.port} | {d.service_tag or ''} | {path} | {d.reason} | {d.source} |"
        )
    return "\n".join(lines) + "\n"
