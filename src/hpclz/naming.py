"""Resource names from the Cloud Adoption Framework convention, with each type's Azure limits.

Abbreviations: learn.microsoft.com/azure/cloud-adoption-framework/ready/azure-best-practices/resource-abbreviations
Limits: learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from hpclz.config.root import LandingZoneConfig


@dataclass(frozen=True)
class NameRule:
    """How one resource type is named: CAF abbreviation, length bounds, allowed shape, scope of uniqueness."""

    abbreviation: str
    min_length: int
    max_length: int
    pattern: str
    charset: str  # human wording of `pattern`, for fix hints
    compact: bool = False  # no separators (storage accounts)
    global_scope: bool = False  # must be unique across Azure, so gets the unique suffix

    def problems(self, name: str) -> list[str]:
        out = []
        if not self.min_length <= len(name) <= self.max_length:
            out.append(f"is {len(name)} characters; allowed {self.min_length}-{self.max_length}")
        if not re.fullmatch(self.pattern, name):
            out.append(f"allows only {self.charset}")
        return out


NAME_RULES: dict[str, NameRule] = {
    "resource_group": NameRule("rg", 1, 90, r"[\w().-]*[\w()-]", "letters, digits, _ ( ) - . (not ending in .)"),
    "virtual_network": NameRule("vnet", 2, 64, r"[A-Za-z0-9][\w.-]*[\w]", "letters, digits, _ . - (alnum first)"),
    "subnet": NameRule("snet", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . - (alnum first)"),
    "network_security_group": NameRule("nsg", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "bastion": NameRule("bas", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "nat_gateway": NameRule("ng", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "public_ip": NameRule("pip", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "route_table": NameRule("rt", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "private_endpoint": NameRule("pep", 2, 64, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "peering": NameRule("peer", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "key_vault": NameRule(
        "kv",
        3,
        24,
        r"[A-Za-z](?!.*--)[A-Za-z0-9-]*[A-Za-z0-9]",
        "letters, digits, single hyphens",
        global_scope=True,
    ),
    "storage_account": NameRule(
        "st", 3, 24, r"[a-z0-9]+", "lowercase letters and digits", compact=True, global_scope=True
    ),
    "managed_identity": NameRule("id", 3, 128, r"[A-Za-z0-9][\w-]*", "letters, digits, _ -"),
    "log_analytics": NameRule("log", 4, 63, r"[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", "letters, digits, -"),
    "action_group": NameRule("ag", 1, 260, r"[^/%&\\?<>]+", "anything but / % & \\ ? < >"),
    "virtual_machine": NameRule("vm", 1, 64, r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", "letters, digits, . -"),
    "network_interface": NameRule("nic", 1, 80, r"[A-Za-z0-9]([\w.-]*\w)?", "letters, digits, _ . -"),
    "lustre": NameRule("amlfs", 2, 80, r"[A-Za-z0-9][\w-]*[A-Za-z0-9]", "letters, digits, _ -"),
    "netapp_account": NameRule("anf", 1, 128, r"[A-Za-z0-9][\w-]*", "letters, digits, _ -"),
    "netapp_pool": NameRule("pool", 1, 64, r"[A-Za-z0-9][\w-]*", "letters, digits, _ -"),
    "netapp_volume": NameRule("vol", 1, 64, r"[A-Za-z][\w-]*", "letters, digits, _ - (letter first)"),
    # Microsoft.DBforMySQL/flexibleServers: 3-63 lowercase letters, digits and hyphens, no hyphen at either end; the
    # name is the server's DNS label (<name>.mysql.database.azure.com), so it is global (resource-name-rules).
    "mysql_server": NameRule(
        "mysql",
        3,
        63,
        r"[a-z0-9][a-z0-9-]*[a-z0-9]",
        "lowercase letters, digits, - (not at either end)",
        global_scope=True,
    ),
    "maintenance_configuration": NameRule("mc", 1, 128, r"[A-Za-z0-9][\w.-]*", "letters, digits, _ . -"),
    "data_collection_rule": NameRule("dcr", 3, 64, r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]", "letters, digits, _ . -"),
    # Recovery Services vaults: 2-50 alphanumerics and hyphens, starting with a letter
    # (learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules#microsoftrecoveryservices).
    "recovery_services_vault": NameRule("rsv", 2, 50, r"[A-Za-z][A-Za-z0-9-]*", "letters, digits, - (letter first)"),
    "metric_alert": NameRule("alert", 1, 260, r"[^/%&\\?<>*:]+", "anything but / % & \\ ? < > * :"),
    # Microsoft.Monitor/accounts and Microsoft.Dashboard/grafana name patterns from their pinned schemas
    # (2023-04-03 "^(?!-)[a-zA-Z0-9-]+[^-]$"; 2024-10-01 "^[a-zA-Z][a-z0-9A-Z-]{0,28}[a-z0-9A-Z]$").
    "monitor_workspace": NameRule("amw", 4, 44, r"[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", "letters, digits, -"),
    "grafana": NameRule("amg", 2, 30, r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]", "letters, digits, - (letter first)"),
    "data_collection_endpoint": NameRule("dce", 3, 44, r"[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", "letters, digits, -"),
    "prometheus_rule_group": NameRule("prg", 1, 260, r"[^:@/#{}%&+*<>?]+", "anything but : @ / # { } % & + * < > ?"),
}

REGION_CODES: dict[str, str] = {
    "eastus": "eus", "eastus2": "eus2", "westus": "wus", "westus2": "wus2", "westus3": "wus3",
    "centralus": "cus", "northcentralus": "ncus", "southcentralus": "scus", "westcentralus": "wcus",
    "canadacentral": "cac", "brazilsouth": "brs", "northeurope": "neu", "westeurope": "weu",
    "uksouth": "uks", "ukwest": "ukw", "francecentral": "frc", "germanywestcentral": "gwc",
    "swedencentral": "sdc", "switzerlandnorth": "szn", "norwayeast": "nwe", "italynorth": "itn",
    "polandcentral": "plc", "spaincentral": "spc", "uaenorth": "uan", "qatarcentral": "qac",
    "southafricanorth": "san", "centralindia": "inc", "southindia": "ins", "japaneast": "jpe",
    "japanwest": "jpw", "koreacentral": "krc", "eastasia": "ea", "southeastasia": "sea",
    "australiaeast": "ae", "australiasoutheast": "ase", "israelcentral": "ilc", "mexicocentral": "mxc",
}  # fmt: skip


# Name parts for roles whose config key is too long to spell out in a resource name.
ROLE_LABELS = {"private_endpoints": "pe", "database": "db"}
CYCLECLOUD_LABEL = "cc"


def region_code(location: str) -> str:
    return REGION_CODES.get(location, location[:6])


def unique_suffix(config: LandingZoneConfig) -> str:
    """Storage account and Key Vault names are global across Azure: without a suffix, two landing zones of the
    same name (or a colleague's test copy) collide, and ARM answers StorageAccountAlreadyTaken / VaultAlreadyExists.
    Derived from the config alone, so rendering stays offline and deterministic; the subscription takes part only
    when metadata.subscription_id names it."""
    naming = config.organization.naming
    if naming.unique_suffix is not None:
        return naming.unique_suffix
    meta = config.metadata
    seed = "/".join([meta.subscription_id or "", meta.name, meta.environment.value, meta.location])
    return hashlib.sha256(seed.encode()).hexdigest()[:4]


class NameBuilder:
    """Names every resource of one landing zone the same way, so a name says what made it."""

    def __init__(self, config: LandingZoneConfig, *, region: str | None = None):
        """`region`: the region names are built for, when not metadata.location (rules pass the one a typo meant)."""
        self._config = config
        self._meta = config.metadata
        self._naming = config.organization.naming
        self._region = region or config.metadata.location

    def name(self, kind: str, *parts: str) -> str:
        rule = NAME_RULES[kind]
        sep = "" if rule.compact else self._naming.separator
        words = [rule.abbreviation, self._meta.name, *[p for p in parts if p]]
        if self._naming.include_environment:
            words.append(self._meta.environment.value)
        if self._naming.include_region:
            words.append(region_code(self._region))
        suffix = unique_suffix(self._config) if rule.global_scope else ""
        text = sep.join(words)
        if rule.compact:
            text = re.sub(r"[^a-z0-9]", "", text.lower())
        if not suffix:
            return text
        if self._naming.unique_suffix is None:
            # A suffix hpclz derived must not be what breaks the length limit: the readable part gives way, and the
            # suffix keeps the name unique (a 12-character metadata.name would otherwise overflow a Key Vault's 24).
            text = text[: rule.max_length - len(sep) - len(suffix)].rstrip(sep or "-")
        return f"{text}{sep}{suffix}"

    def resource_group(self, area: str, override: str | None = None) -> str:
        return override or self.name("resource_group", area)

    def subnet(self, role: str) -> str:
        return self.name("subnet", ROLE_LABELS.get(role, role))

    def network_security_group(self, role: str) -> str:
        return self.name("network_security_group", ROLE_LABELS.get(role, role))

    def cyclecloud_vm(self) -> str:
        return self.name("virtual_machine", CYCLECLOUD_LABEL)
