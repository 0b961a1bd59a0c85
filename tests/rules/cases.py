"""The failing case of every config rule: a preset plus the smallest mutation that must fire the rule.

tests/rules/test_config_rules.py checks that this table covers CONFIG_RULES exactly, that each mutation
fires its rule, and that the unmutated presets are the passing cases.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from typing import Any

from ruamel.yaml import YAML

from hpclz.config import LoadedConfig, load_config_text
from tests.conftest import REPO

ZERO = "00000000-0000-0000-0000-000000000000"
OTHER = "11111111-2222-4333-8444-555555555555"

Doc = dict[str, Any]
Mutation = Callable[[Doc], None]


@dataclass(frozen=True)
class Case:
    preset: str
    mutate: Mutation
    severity: str | None = None  # when the rule reports this case at other than its default severity


def preset_doc(name: str) -> Doc:
    data: Doc = YAML(typ="safe").load((REPO / "configs" / f"{name}.yaml").read_text(encoding="utf-8"))
    return data


def load_case(case: Case, label: str) -> LoadedConfig:
    doc = copy.deepcopy(preset_doc(case.preset))
    case.mutate(doc)
    out = StringIO()
    YAML(typ="safe").dump(doc, out)
    return load_config_text(out.getvalue(), f"{label}.yaml")


def _set(path: str, value: Any) -> Mutation:
    """Set a dotted path (integers index lists); a value of DELETE removes the key."""

    def mutate(doc: Doc) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = doc
        for part in parents:
            node = node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)

    return mutate


def _all(*mutations: Mutation) -> Mutation:
    def mutate(doc: Doc) -> None:
        for m in mutations:
            m(doc)

    return mutate


DELETE = object()
# Shapes from learn.microsoft.com/azure/cyclecloud/how-to/create-custom-image (ImageName examples).
GALLERY_IMAGE = (
    f"/subscriptions/{ZERO}/resourceGroups/MyResourceGroup/providers/Microsoft.Compute/galleries/MyGallery"
    "/images/MyImage/versions/1.0.0"
)
MANAGED_IMAGE = f"/subscriptions/{ZERO}/resourceGroups/MyResourceGroup/providers/Microsoft.Compute/images/MyCustomImage"
SUBNETS = "network.vnet.subnets"
GB300 = "Standard_ND128isr_GB300_v6"
GB_IMAGE = "microsoft-dsvm:ubuntu-hpc:2404-gb:24.04.2025110401"
P = "compute.partitions"
ACCOUNTING = {
    "mode": "existing",
    "url": "slurmdb-prod.mysql.database.azure.com",
    "user": "slurmdbd",
    "password_secret_name": "slurmdb-password",
}

CASES: dict[str, list[Case]] = {
    "HPCLZ-ORG-001": [Case("ai-training", _set("organization.required_tags", ["owner", "costCenter", "project"]))],
    "HPCLZ-ORG-002": [Case("energy", _set("metadata.location", "westeurope"))],
    "HPCLZ-ORG-003": [Case("ai-training", _set("metadata.tags.team/name", "hpc"))],
    "HPCLZ-ORG-004": [Case("ai-training", _set("organization.resource_groups", {"compute": "rg compute"}))],
    "HPCLZ-ORG-005": [
        Case("ai-training", _set("metadata.location", "westeurpe")),
        Case("energy", _set("organization.policies.allowed_locations", ["southcentralus", "atlantis"])),
    ],
    "HPCLZ-IDN-001": [Case("ai-training", _set("identity.groups.readers", [ZERO]))],
    "HPCLZ-IDN-002": [Case("ai-training", _set("identity.groups.readers", ["53f5840a-6a69-4e27-ab39-b50a1723b1fb"]))],
    "HPCLZ-IDN-003": [
        Case(
            "ai-training",
            _set("identity.extra_role_assignments", [{"principal_id": OTHER, "role": "Owner", "area": "compute"}]),
        ),
        Case(
            "energy",
            _set(
                "identity.extra_role_assignments",
                [{"principal_id": OTHER, "role": "User Access Administrator", "area": "storage"}],
            ),
        ),
    ],
    "HPCLZ-IDN-004": [
        Case(
            "ai-training",
            _set("identity.ssh_public_key", "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY= me"),
        )
    ],
    "HPCLZ-IDN-005": [Case("ai-training", _set("identity.key_vault.purge_protection", False))],
    "HPCLZ-IDN-006": [Case("ai-training", _set("identity.managed_identities.compute", False))],
    "HPCLZ-NET-001": [Case("ai-training", _set(f"{SUBNETS}.admin.cidr", "10.41.0.0/24"))],
    "HPCLZ-NET-002": [Case("ai-training", _set(f"{SUBNETS}.private_endpoints.cidr", "10.40.0.0/26"))],
    "HPCLZ-NET-003": [Case("finance", _set("network.hub_peering.remote_address_space", ["10.60.0.0/20"]))],
    "HPCLZ-NET-004": [
        Case("ai-training", _set(f"{P}.0.max_nodes", 2100)),
        Case("ai-training", _set(f"{SUBNETS}.admin.cidr", "10.40.0.0/29")),
    ],
    "HPCLZ-NET-005": [
        Case("ai-training", _set(f"{SUBNETS}.bastion.cidr", "10.40.1.0/27")),
        Case("ai-training", _set(f"{SUBNETS}.bastion.name", "snet-bastion")),
        Case("energy", _set(f"{SUBNETS}.bastion", DELETE)),
    ],
    "HPCLZ-NET-006": [Case("ai-training", _set(f"{SUBNETS}.lustre.cidr", "10.40.2.0/25"))],
    "HPCLZ-NET-007": [
        Case("manufacturing", _set(f"{SUBNETS}.netapp.delegation", DELETE)),
        Case("ai-training", _set(f"{SUBNETS}.lustre.delegation", "Microsoft.NetApp/volumes")),
    ],
    "HPCLZ-NET-008": [
        Case(
            "ai-training",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": f"ssh-{i}",
                        "subnet": "admin",
                        "priority": 100 + i,
                        "source_address_prefix": src,
                        "destination_port_range": port,
                    }
                    for i, (src, port) in enumerate([("0.0.0.0", "22"), ("Any", "20-25"), ("*", "80,22")])
                ],
            ),
        )
    ],
    "HPCLZ-NET-009": [
        Case(
            "manufacturing",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": "web",
                        "subnet": "compute",
                        "priority": 300,
                        "source_address_prefix": "Internet",
                        "destination_port_range": "8080",
                    }
                ],
            ),
        )
    ],
    "HPCLZ-NET-010": [Case("finance", _set("network.hub_peering", DELETE))],
    "HPCLZ-NET-014": [
        Case(
            "manufacturing",
            _all(
                _set("network.nat_gateway.enabled", False),
                _set(
                    "network.hub_peering",
                    {
                        "remote_vnet_id": f"/subscriptions/{ZERO}/resourceGroups/rg-hub/providers/"
                        "Microsoft.Network/virtualNetworks/vnet-hub",
                        "remote_address_space": ["10.0.0.0/16"],
                        "firewall_private_ip": "10.0.1.4",
                    },
                ),
            ),
        )
    ],
    "HPCLZ-NET-011": [
        Case("ai-training", _set("network.nat_gateway.enabled", False)),
        Case("finance", _set("network.hub_peering.firewall_private_ip", DELETE)),
        Case("finance", _set("network.hub_peering.firewall_private_ip", "10.60.0.4")),
    ],
    "HPCLZ-CMP-001": [Case("ai-training", _set(f"{P}.0.vm_size", "Standard_ND96isr_H100_v4"))],
    "HPCLZ-CMP-002": [
        Case("ai-training", _set("compute.scheduler.vm_size", "Standard_D8as_v9")),
        Case("energy", _set("compute.cyclecloud", {"vm_size": "Standard_Q4_v1"})),
    ],
    "HPCLZ-CMP-003": [Case("energy", _set(f"{P}.0.gpu_clocks", "max"))],
    "HPCLZ-CMP-004": [Case("finance", _set(f"{P}.1.infiniband", True))],
    "HPCLZ-CMP-005": [
        Case("ai-training", _set(f"{P}.0.infiniband", False)),
        Case("ai-training", _all(_set(f"{P}.1.vm_size", "Standard_NC96ads_A100_v4"), _set(f"{P}.1.infiniband", False))),
    ],
    "HPCLZ-CMP-006": [Case("energy", _set(f"{P}.2.max_nodes", 1))],
    # 101 HBv4 nodes: two scale sets of at most 100 (one placement group each); 91 GB300 nodes: two of 90 (5 racks).
    "HPCLZ-CMP-019": [
        Case("energy", _set(f"{P}.0.max_nodes", 101)),
        Case(
            "ai-training",
            _all(_set(f"{P}.0.vm_size", GB300), _set(f"{P}.0.image", GB_IMAGE), _set(f"{P}.0.max_nodes", 108)),
        ),
    ],
    "HPCLZ-CMP-007": [Case("finance", _set("storage.blob", {"mode": "disabled"}))],
    "HPCLZ-CMP-008": [
        Case("ai-training", _set(f"{P}.1.name", "h100")),
        Case("energy", _set(f"{P}.1.name", "default")),
    ],
    "HPCLZ-CMP-009": [
        Case("ai-training", _set(f"{P}.1.default", True)),
        Case("finance", _set(f"{P}.0.default", False), severity="warning"),
    ],
    "HPCLZ-CMP-010": [Case("manufacturing", _set(f"{P}.1.max_nodes", 4))],
    "HPCLZ-CMP-011": [
        Case("ai-training", _set("compute.quotas.standardNDSH100v5Family", 1000)),
        Case("finance", _set(f"{P}.1.max_nodes", 201)),
    ],
    "HPCLZ-CMP-012": [Case("ai-training", _set("compute.quotas.standardNDSH100V6Family", 96))],
    "HPCLZ-CMP-013": [Case("finance", _set(f"{P}.1.nvme_scratch", {"enabled": True}))],
    "HPCLZ-CMP-014": [Case("ai-training", _set("verify.partitions", ["h100", "a100"]))],
    "HPCLZ-CMP-015": [Case("ai-training", _set(f"{P}.0.image", GALLERY_IMAGE))],
    "HPCLZ-CMP-016": [
        Case("ai-training", _set("compute.login.image", GALLERY_IMAGE)),
        Case("energy", _set(f"{P}.0.image", MANAGED_IMAGE)),
    ],
    "HPCLZ-STO-001": [
        Case("energy", _set("storage.lustre.capacity_tib", 50)),
        Case("energy", _set("storage.lustre.capacity_tib", 4)),
        Case("ai-training", _set("storage.lustre.capacity_tib", 136), severity="warning"),
    ],
    "HPCLZ-STO-002": [
        Case("ai-training", _set("storage.lustre.hsm.container", "archive")),
        Case("energy", _set("storage.blob", {"mode": "disabled"})),
    ],
    "HPCLZ-STO-003": [
        Case("manufacturing", _set("storage.netapp.pool_size_tib", 4)),
        Case("manufacturing", _set("storage.netapp.pool_size_tib", 4096)),
        # 6 TiB holds the 5120 GiB of volumes, but not with shared home and /sched's 1124 GiB.
        Case("manufacturing", _set("storage.netapp.pool_size_tib", 6)),
    ],
    "HPCLZ-STO-004": [Case("manufacturing", _set("storage.netapp.volumes.1.quota_gib", 204800))],
    "HPCLZ-STO-005": [
        Case(
            "ai-training",
            _all(_set("metadata.name", "aitrainingxy"), _set("organization.naming.unique_suffix", "a1b2c3")),
        )
    ],
    "HPCLZ-STO-006": [Case("ai-training", _set("storage.blob.containers.1.versioning", False))],
    "HPCLZ-STO-050": [Case("ai-training", _set("storage.blob.containers.1.versioning", False))],
    "HPCLZ-STO-051": [
        Case("ai-training", _set("storage.blob.containers.0.retention_days", 7)),
        Case("finance", _set("storage.blob.containers.1.retention_locked", True)),
    ],
    "HPCLZ-STO-052": [
        Case(
            "finance",
            _set(
                "storage.blob",
                {
                    "mode": "existing",
                    "resource_id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-data"
                    "/providers/Microsoft.Storage/storageAccounts/stcheckpoints",
                    "containers": [{"name": "checkpoints", "purpose": "checkpoints", "immutable": True}],
                },
            ),
        )
    ],
    "HPCLZ-STO-053": [Case("finance", _set("storage.blob.lifecycle.delete_after_days", 30))],
    "HPCLZ-STO-054": [Case("ai-training", _set("storage.blob.point_in_time_restore_days", 14))],
    "HPCLZ-STO-055": [
        Case(
            "finance",
            _all(
                _set("storage.blob.containers.0.versioning", False),
                _set("storage.blob.containers.0.immutable", False),
                _set("storage.blob.containers.0.retention_days", DELETE),
                _set("storage.blob.containers.1.versioning", False),
            ),
        )
    ],
    "HPCLZ-STO-056": [Case("finance", _set("storage.blob.containers.0.manifest_key", "s3cr3t-in-the-file"))],
    "HPCLZ-STO-007": [
        Case("ai-training", _set(f"{SUBNETS}.lustre", DELETE)),
        Case("manufacturing", _set(f"{SUBNETS}.netapp", DELETE)),
        Case("finance", _set(f"{SUBNETS}.private_endpoints", DELETE)),
    ],
    "HPCLZ-STO-008": [Case("finance", _set("storage.blob.allow_public_access", True))],
    "HPCLZ-STO-009": [
        Case("finance", _set("storage.scratch.source", "lustre")),
        Case(
            "manufacturing",
            _all(_set(f"{P}.0.nvme_scratch", DELETE), _set(f"{P}.1.nvme_scratch", DELETE)),
            severity="warning",
        ),
    ],
    "HPCLZ-STO-010": [Case("ai-training", _set("storage.blob.replication", "LRS"))],
    "HPCLZ-STO-011": [
        Case("manufacturing", _set("storage.netapp.volumes.1.mount_point", "/anf/apps/")),
        Case("ai-training", _set(f"{P}.0.nvme_scratch.mount_point", "/lustre")),
    ],
    # ai-training grants VM login roles to its admins and users groups; with Entra ID login off nobody gets in.
    "HPCLZ-IDN-008": [Case("ai-training", _set("identity.entra_login", False))],
    # A group given VM User Login on the compute area reaches the CycleCloud server and CycleCloud's identity.
    "HPCLZ-IDN-011": [
        Case(
            "energy",
            _set(
                "identity.extra_role_assignments",
                [{"principal_id": OTHER, "role": "Virtual Machine User Login", "area": "compute"}],
            ),
        )
    ],
    # A non-admin principal that could take hpclz's identities or read every secret, both in the management group.
    "HPCLZ-IDN-012": [
        Case(
            "energy",
            _set(
                "identity.extra_role_assignments",
                [{"principal_id": OTHER, "role": "Key Vault Secrets User", "area": "management"}],
            ),
        ),
        Case(
            "energy",
            _set(
                "identity.extra_role_assignments",
                [{"principal_id": OTHER, "role": "Managed Identity Operator", "area": "management"}],
            ),
        ),
    ],
    # energy names CycleCloud's Entra ID app; without it its groups reach no cluster node.
    # Groups named, no CycleCloud Entra ID app: no member gets a node account, whether or not they reach the server.
    "HPCLZ-IDN-009": [
        Case("energy", _set("identity.cyclecloud_entra", DELETE)),
        Case("ai-training", _all(_set("identity.cyclecloud_entra", DELETE), _set("identity.entra_login", False))),
        Case("manufacturing", _all(_set("identity.cyclecloud_entra", DELETE), _set("identity.groups.admins", []))),
    ],
    # manufacturing's and energy's users arrive over the hub; without it Bastion is the only way in (the admins').
    "HPCLZ-IDN-013": [
        Case("manufacturing", _set("network.hub_peering", DELETE)),
        Case("energy", _set("network.hub_peering", DELETE)),
    ],
    "HPCLZ-IDN-010": [Case("energy", _set("identity.key_vault.secrets.slurmdb-password", "plain-Text-Pa55word"))],
    "HPCLZ-IDN-007": [
        Case("finance", _set("identity.key_vault.secrets.Pricing-Library-Licence", "${env:OTHER}")),
        Case("finance", _set("identity.key_vault.secrets.pricingLibraryLicence", "${env:OTHER}")),
    ],
    "HPCLZ-STO-012": [
        Case("ai-training", _set("identity.managed_identities.compute", False)),
        Case("manufacturing", _set("identity.managed_identities", {"scheduler": True, "compute": False})),
    ],
    # 99 GiB: one under the premium minimum (learn.microsoft.com/azure/storage/files/understanding-billing).
    "HPCLZ-STO-040": [
        Case("energy", _set("storage.shared.sched_gib", 99)),
        Case("finance", _set("storage.shared.home_gib", 50)),
    ],
    "HPCLZ-STO-041": [Case("ai-training", _set("network.vnet.subnets.private_endpoints", DELETE))],
    "HPCLZ-STO-042": [
        Case("manufacturing", _set("storage.netapp.volumes.0.mount_point", "/shared/apps")),
        Case("energy", _set("storage.shared.mount_point", "/sched")),
        Case("ai-training", _set("storage.shared.mount_point", "/scratch/home")),
    ],
    # A MySQL flexible server's host name form: <server>.mysql.database.azure.com (learn.microsoft.com/azure/mysql).
    # storage.shared mode netapp (manufacturing): its volumes live in storage.netapp's pool.
    "HPCLZ-STO-043": [
        Case("manufacturing", _set("storage.netapp", {"mode": "disabled"})),
        Case("manufacturing", _set("storage.netapp.volumes.0.name", "hpclz-home")),
        Case("manufacturing", _set("identity.managed_identities", {"scheduler": False, "compute": True})),
    ],
    "HPCLZ-CMP-040": [
        Case("finance", _set("compute.accounting", {**ACCOUNTING, "password_secret_name": "missing"})),
        Case("energy", _set("identity.key_vault.secrets", {})),
    ],
    "HPCLZ-CMP-041": [
        Case(
            "ai-training",
            _all(
                _set("compute.accounting", ACCOUNTING),
                _set("identity.key_vault.secrets", {"slurmdb-password": "${env:SLURMDB_PASSWORD}"}),
                _set("identity.managed_identities.scheduler", False),
            ),
        )
    ],
    # Any accounting: cyclecloud-slurm's slurmdbd.conf on /sched holds the password (the rule's docstring).
    "HPCLZ-CMP-047": [
        Case(
            "manufacturing",
            _all(
                _set("compute.accounting", ACCOUNTING),
                _set("identity.key_vault.secrets", {"slurmdb-password": "${env:SLURMDB_PASSWORD}"}),
            ),
        )
    ],
    # Slurm accounting mode new, on the energy preset's MySQL flexible server (learn.microsoft.com/azure/mysql/
    # flexible-server: concepts-networking-vnet, concepts-high-availability, concepts-service-tiers-storage).
    "HPCLZ-CMP-042": [
        Case("energy", _set("network.vnet.subnets.database", DELETE)),
        Case("energy", _set("network.vnet.subnets.database.delegation", None)),
        Case("manufacturing", _set("network.vnet.subnets.admin.delegation", "Microsoft.DBforMySQL/flexibleServers")),
    ],
    # /30: four addresses, less than the five Azure reserves; /29 is the documented minimum.
    "HPCLZ-CMP-043": [Case("energy", _set("network.vnet.subnets.database.cidr", "10.20.1.128/30"))],
    "HPCLZ-CMP-044": [
        Case(
            "energy",
            _all(_set("compute.accounting.tier", "Burstable"), _set("compute.accounting.sku", "Standard_B2ms")),
        )
    ],
    "HPCLZ-CMP-045": [
        Case("energy", _set("compute.accounting.standby_zone", "1")),
        Case("energy", _set("compute.accounting.zone", DELETE)),
        Case("energy", _set("compute.accounting.high_availability", "SameZone")),
    ],
    "HPCLZ-CMP-046": [
        Case(
            "energy",
            _all(
                _set("compute.accounting.tier", "Burstable"),
                _set("compute.accounting.sku", "Standard_B2ms"),
                _set("compute.accounting.high_availability", "Disabled"),
                _set("compute.accounting.standby_zone", DELETE),
            ),
        )
    ],
    "HPCLZ-SEC-001": [Case("finance", _set("defender", DELETE)), Case("ai-training", _set("defender.plans", []))],
    "HPCLZ-SEC-002": [Case("finance", _set("defender.plans", ["StorageAccounts", "KeyVaults"]))],
    "HPCLZ-PRT-001": [Case("ai-training", _set("storage.shared", {"mode": "disabled"}))],
    "HPCLZ-PRT-002": [Case("ai-training", _set("portal.oidc", DELETE))],
    "HPCLZ-PRT-007": [Case("energy", _set("identity.cyclecloud_entra.tenant_id", OTHER))],
    "HPCLZ-PRT-008": [
        Case("energy", _set("portal.oidc.user_domain", DELETE)),
        Case("energy", _set("portal.oidc.user_domain", "example.com")),
        Case("ai-training", _set("portal.oidc.user_domain", "corp.example.org")),
        Case("ai-training", _set("portal.oidc.user_domain", "contoso.local")),
    ],
    # 0.0.0.0/0 is the whole Internet; 8.8.8.0/24 holds Google's public DNS (developers.google.com/speed/public-dns,
    # 8.8.8.8); 203.0.113.0/24
    # is RFC 5737's documentation range, which Python's ipaddress calls private but no private network uses.
    "HPCLZ-PRT-003": [
        Case("ai-training", _set("portal.allowed_cidrs", ["10.0.0.0/8", "0.0.0.0/0"])),
        Case("ai-training", _set("portal.allowed_cidrs", ["8.8.8.0/24"])),
        Case("ai-training", _set("portal.allowed_cidrs", ["203.0.113.0/24"])),
    ],
    # ai-training's users reach the portal from the hub (allowed_cidrs); without that range only Bastion is left.
    "HPCLZ-PRT-004": [
        Case("ai-training", _all(_set("portal.allowed_cidrs", []), _set("network.bastion.enabled", False))),
        Case("ai-training", _all(_set("portal.allowed_cidrs", []), _set("network.bastion.sku", "Basic"))),
    ],
    "HPCLZ-PRT-005": [
        Case("ai-training", _set("portal.oidc.client_secret_name", "ood-client-secret")),
        Case(
            "ai-training",
            _all(
                _set("identity.key_vault", {"mode": "disabled"}),
                _set("portal.oidc.client_secret_name", "ood-client-secret"),
            ),
        ),
    ],
    # ai-training's admin subnet is 10.40.0.0/24, its compute subnet 10.40.8.0/21.
    "HPCLZ-PRT-006": [
        # The compute subnet refuses the admin subnet: srun's step launch (slurmd 6818) and the app proxy.
        Case(
            "ai-training",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": "no-admin",
                        "subnet": "compute",
                        "priority": 200,
                        "access": "Deny",
                        "source_address_prefix": "10.40.0.0/24",
                    }
                ],
            ),
        ),
        # A deny in the middle of srun's range, on the portal's subnet, from the whole VNet.
        Case(
            "ai-training",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": "no-high",
                        "subnet": "admin",
                        "priority": 300,
                        "access": "Deny",
                        "destination_port_range": "61000-61010",
                    }
                ],
            ),
        ),
        # The portal's subnet may not open SSH anywhere: the shell app cannot reach the login node.
        Case(
            "energy",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": "no-ssh-out",
                        "subnet": "admin",
                        "priority": 300,
                        "direction": "Outbound",
                        "access": "Deny",
                        "destination_port_range": "22",
                    }
                ],
            ),
        ),
    ],
    "HPCLZ-MON-001": [Case("ai-training", _set("monitoring", {"mode": "disabled"}))],
    "HPCLZ-MON-002": [Case("energy", _set("monitoring.retention_days", 30))],
    "HPCLZ-MON-003": [Case("finance", _set("monitoring.action_group.emails", []))],
    "HPCLZ-MON-004": [Case("energy", _set("monitoring.diagnostic_settings", False))],
    "HPCLZ-MON-005": [
        Case("finance", _set("monitoring.diagnostic_settings", False)),
        Case("ai-training", _set("monitoring", {"mode": "disabled"})),
    ],
    "HPCLZ-MON-006": [Case("ai-training", _set("identity.managed_identities.compute", False))],
    "HPCLZ-MON-007": [Case("energy", _set("monitoring.diagnostic_settings", False))],
    "HPCLZ-MON-008": [
        Case("ai-training", _set("monitoring.prometheus", {"mode": "disabled"})),
        Case("energy", _set("monitoring.prometheus.gpu_exporter", False)),
    ],
    "HPCLZ-MNT-001": [Case("ai-training", _set("maintenance.window", DELETE))],
    "HPCLZ-MNT-002": [
        Case("ai-training", _set("maintenance.window.duration", "01:00")),
        Case("energy", _all(_set("maintenance.scope", "InGuestPatch"), _set("maintenance.window.duration", "04:00"))),
        Case("finance", _all(_set("maintenance.scope", "OSImage"), _set("maintenance.window.duration", "04:59"))),
    ],
    "HPCLZ-MNT-003": [Case("ai-training", _set("maintenance.window.start", "2026-02-30 02:00"))],
    "HPCLZ-MNT-004": [
        Case("ai-training", _set("maintenance.scheduled_events.enabled", False)),
        Case("finance", _set("maintenance.scheduled_events.drain_on", ["Reboot", "Redeploy"])),
    ],
    "HPCLZ-COST-001": [Case("manufacturing", _set(f"{P}.0.idle_shutdown_minutes", DELETE))],
    "HPCLZ-COST-005": [
        Case("energy", _set(f"{P}.2.idle_shutdown_minutes", 30)),
        Case("manufacturing", _set(f"{P}.1.idle_shutdown_minutes", DELETE)),
    ],
    "HPCLZ-COST-002": [Case("ai-training", _set("compute.login.vm_size", "Standard_NC24ads_A100_v4"))],
    "HPCLZ-COST-003": [Case("ai-training", _set(f"{P}.0.spot_max_price", 3.5))],
    # Zones from real `az vm list-skus` listings (tests/fixtures/skus/README.md): westus2 2023-07-08 shows
    # Standard_ND96asr_v4 in zone 3 only; the --all listing of 2026-08-13 shows Standard_ND96isr_H100_v5 in zone 2
    # only of westeurope, and Standard_NC24ads_A100_v4 in zones 2 and 3 of westeurope.
    "HPCLZ-ZON-001": [
        Case(
            "ai-training",
            _all(_set("metadata.location", "westus2"), _set(f"{P}.0.vm_size", "Standard_ND96asr_v4")),
        ),
        Case("ai-training", _set("metadata.location", "westeurope")),
        Case(
            "manufacturing",
            _all(_set(f"{P}.0.vm_size", "Standard_NC24ads_A100_v4"), _set(f"{P}.0.zone", 1)),
        ),
    ],
    # A node image that floats: `latest` (the stock default of every node role) or a gallery image definition without
    # /versions/ (its latest version, ImageReference.id in Microsoft.Compute.json 2024-07-01). Error in prod, warning
    # in test.
    "HPCLZ-CMP-070": [
        # A Grace (arm64) size with the x64 Ubuntu-HPC 22.04 image, and an x64 size with the arm64 one.
        Case("ai-training", _all(_set(f"{P}.0.vm_size", GB300), _set(f"{P}.0.max_nodes", 18))),
        Case("ai-training", _set(f"{P}.1.image", GB_IMAGE)),
    ],
    "HPCLZ-CMP-071": [
        Case(
            "ai-training",
            _all(_set(f"{P}.0.vm_size", GB300), _set(f"{P}.0.image", GB_IMAGE), _set(f"{P}.0.max_nodes", 64)),
        ),
    ],
    # ai-training's h200 partition cut to 8 nodes beside its two GB300 racks, on Slurm 24.11 (topology.conf, one
    # cluster-wide plugin): too small to be a block of 18. From 25.05 (the preset's 25.11.5) it is no finding.
    "HPCLZ-CMP-072": [
        Case("ai-training", _all(_set(f"{P}.1.max_nodes", 8), _set("compute.cyclecloud.slurm_version", "24.11.5")))
    ],
    # ai-training's GB300 partition (the third) asking for an idle time: it is kept out of auto-suspend.
    "HPCLZ-CMP-073": [Case("ai-training", _set(f"{P}.2.idle_shutdown_minutes", 30))],
    "HPCLZ-CMP-050": [
        Case("ai-training", _set(f"{P}.1.image", "microsoft-dsvm:ubuntu-hpc:2204:latest")),
        Case("manufacturing", _set("compute.scheduler.image", DELETE), severity="warning"),
        Case(
            "finance",
            _set(
                "compute.login.image",
                "/subscriptions/"
                + ZERO
                + "/resourceGroups/rg-images/providers/Microsoft.Compute/galleries/hpc/images/u2204",
            ),
        ),
    ],
    # Ubuntu-HPC 20.04 (Azure/azhpc-images@376553dc^ README.md l.15): python3 3.8, no newer Python to be had.
    "HPCLZ-CMP-051": [Case("finance", _set("compute.scheduler.image", "microsoft-dsvm:ubuntu-hpc:2004:latest"))],
    "HPCLZ-MON-020": [Case("ai-training", _set("monitoring", {"mode": "disabled"}))],
    "HPCLZ-MON-021": [Case("finance", _set("network.flow_logs.retention_days", 30))],
    "HPCLZ-MNT-020": [Case("finance", _set("backup", DELETE)), Case("ai-training", _set("backup.enabled", False))],
    "HPCLZ-MNT-030": [Case("finance", _set("backup.shared.enabled", False))],
    # Passing case: manufacturing's shared home is on NetApp volumes (snapshots), not Azure Files.
    "HPCLZ-MNT-031": [Case("manufacturing", _set("storage.shared", {"mode": "azure_files"}))],
    "HPCLZ-MNT-032": [
        Case("manufacturing", _set("backup.shared", {"enabled": True, "daily_snapshots": 0, "weekly_snapshots": 0})),
        # A week of hourly (168) + 7 daily + 52 weekly + 36 monthly = 263 > 255 (azure-netapp-files-resource-limits).
        Case(
            "manufacturing",
            _set(
                "backup.shared",
                {"enabled": True, "hourly_snapshots": 168, "weekly_snapshots": 52, "monthly_snapshots": 36},
            ),
        ),
    ],
    "HPCLZ-MNT-033": [
        Case(
            "manufacturing",
            _set(
                "storage.shared",
                {
                    "mode": "existing",
                    "address": "nfs.example.com",
                    "home_export": "/export/home",
                    "sched_export": "/export/sched",
                },
            ),
        )
    ],
    "HPCLZ-ZON-002": [Case("manufacturing", _set("compute.service_zone", "2"))],
    "HPCLZ-ZON-003": [
        Case("ai-training", _set(f"{P}.1.zone", DELETE)),
        Case("energy", _set("storage.lustre.zone", 2)),
    ],
    "HPCLZ-ZON-004": [Case("finance", _set("compute.service_zone", DELETE))],
    "HPCLZ-COST-004": [Case("energy", _set("storage.blob.lifecycle.archive_after_days", 20))],
    # Rows of hpclz.catalog.versions.STACK: 25.11.4 is cyclecloud-slurm 4.0.8's build, not 4.0.9's
    # (Azure/cyclecloud-slurm@50e6739:project.ini:26); 3.0.11 never ran on CycleCloud 8.9; the 3.0.11 triple is an
    # upgrade source only, each row keeping its parts together.
    # A digest for one file of cyclecloud-slurm 4.0.9's three (project.ini [blobs] Files at 50e6739), and one for a
    # file the release does not have.
    "HPCLZ-CMP-018": [
        Case(
            "energy",
            _set(
                "compute.cyclecloud.slurm_project_sha256",
                {"azure-slurm-pkg-4.0.9.tar.gz": "a" * 64, "slurm-25.11.5.tar.gz": "b" * 64},
            ),
        )
    ],
    # Nothing pinned, as in every preset (no public source states the 4.0.9 assets' digests); also without CycleCloud's
    # identity, where no record is kept. Its passing case is a pinned config (test_config_rules.py).
    "HPCLZ-CMP-021": [
        Case("manufacturing", _set("compute.cyclecloud.slurm_project_sha256", {})),
        Case("manufacturing", _set("identity.managed_identities", {"scheduler": False})),
    ],
    "HPCLZ-CMP-017": [
        Case("ai-training", _set("compute.cyclecloud.slurm_version", "25.11.4")),
        Case("energy", _set("compute.cyclecloud.slurm_project_version", "3.0.11")),
        Case(
            "finance",
            _all(
                _set("compute.cyclecloud.version", "8.7.1"),
                _set("compute.cyclecloud.slurm_project_version", "3.0.11"),
                _set("compute.cyclecloud.slurm_version", "24.05.4-2"),
            ),
        ),
    ],
    # The server's image release: one hpclz has no image of, one newer than the release it would run.
    "HPCLZ-CMP-020": [
        Case("ai-training", _set("compute.cyclecloud.image_release", "8.8.0")),
        Case(
            "finance",
            _all(
                _set("compute.cyclecloud.version", "8.9.0"),
                _set("compute.cyclecloud.slurm_project_version", "4.0.6"),
                _set("compute.cyclecloud.slurm_version", "25.05.5"),
                _set("compute.cyclecloud.image_release", "8.9.1"),
            ),
        ),
    ],
    # cyclecloud-slurm 4.0.9 installs enroot and pyxis on every node (azure-slurm-install/install.py:929-997).
    "HPCLZ-CMP-060": [Case("ai-training", _set(f"{P}.0.containers.pyxis", False))],
    # HB120rs_v3 has 2 local NVMe disks (catalog): without nvme_scratch its nodes get no /scratch.
    "HPCLZ-STO-060": [Case("energy", _set(f"{P}.1.nvme_scratch", DELETE))],
    # The zone's own data account and CycleCloud's locker (names as render makes them for energy).
    "HPCLZ-STO-070": [
        Case(
            "energy",
            _set(
                "state", {"backend": "azure_blob", "account_url": "https://stenergyprodscuseb80.blob.core.windows.net"}
            ),
        ),
        Case(
            "energy",
            _set(
                "state",
                {"backend": "azure_blob", "account_url": "https://stenergyccprodscuseb80.blob.core.windows.net/"},
            ),
        ),
    ],
    # Host scope on the CycleCloud server (learn.microsoft.com/azure/virtual-machines/maintenance-configurations).
    "HPCLZ-MNT-005": [
        Case("ai-training", _all(_set("maintenance.scope", "Host"), _set("maintenance.window.duration", "06:00")))
    ],
    "HPCLZ-NET-012": [Case("finance", _set("network.hub_peering.hub_gateway", False))],
    # manufacturing's FlexNet rule names 10.0.0.0/16, which only its hub peering routes to.
    "HPCLZ-NET-015": [
        Case("manufacturing", _set("network.hub_peering", DELETE)),
        Case("manufacturing", _set("network.nsg_rules.0.destination_address_prefix", "10.1.0.0/16")),
        Case("manufacturing", _set("network.nsg_rules.0.destination_address_prefix", "10.0.0.0/15")),
    ],
    "HPCLZ-NET-013": [
        # finance's /sched share is Azure Files: 4010 is hpclz's DenyNfsFromElsewhere on the private-endpoints NSG.
        Case(
            "finance",
            _set(
                "network.nsg_rules",
                [
                    {
                        "name": "allow-hub-nfs",
                        "subnet": "private_endpoints",
                        "priority": 4010,
                        "destination_port_range": "2049",
                    }
                ],
            ),
        ),
        # Two of the config's own rules, one subnet, one direction, one priority (manufacturing's licence rule: 200).
        Case(
            "manufacturing",
            lambda doc: doc["network"]["nsg_rules"].append(
                {"name": "allow-more-out", "subnet": "compute", "priority": 200, "direction": "Outbound"}
            ),
        ),
    ],
    # ZRS with Archive: access-tiers-overview.md lists LRS, GRS and RA-GRS only.
    "HPCLZ-STO-013": [
        Case("energy", _set("storage.blob.replication", "ZRS")),
        Case("finance", _set("storage.blob.replication", "GZRS")),
    ],
    "HPCLZ-STO-014": [Case("energy", _set("storage.lustre.hsm.resource_provider_object_id", DELETE))],
    # ai-training's H100 partition alone is priced from the shipped snapshot (recorded eastus2 API answer).
    "HPCLZ-COST-010": [
        Case("ai-training", _set("budget", {"monthly_usd": 1_000_000})),
        Case("ai-training", _set("budget", {"monthly_usd": 2_000_000, "partition_hours": 250})),
    ],
}
