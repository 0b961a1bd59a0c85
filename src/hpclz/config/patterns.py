"""What each field pattern of the config means, said plainly with an example: errors never show regex text."""

from __future__ import annotations

from hpclz.config.compute import IMAGE_PATTERN, IMAGE_URN_PATTERN, VM_SIZE_PATTERN
from hpclz.config.identity import ENTRA_ENDPOINT_PATTERN
from hpclz.config.operations import ACCOUNT_URL_PATTERN

_SEMVER = "three numbers separated by dots, like 8.7.1"

PLAIN: dict[str, str] = {
    ENTRA_ENDPOINT_PATTERN: "an https:// sign-in host with no path, like https://login.microsoftonline.com",
    r"^[A-Za-z0-9]{1,12}$": "1 to 12 letters or digits, like hpcalerts",
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$": "an e-mail address, like ops@contoso.com",
    ACCOUNT_URL_PATTERN: "an https:// storage account URL with no path, like https://sthpclzstate.blob.core.windows.net",
    r"^[a-z0-9](-?[a-z0-9])+$": "lowercase letters, digits and single hyphens, like checkpoints-2024",
    r"^\d+\.\d+\.\d+$": _SEMVER,
    r"^\d+\.\d+\.\d+(-\d+)?$": "a version like 23.11.10 or 23.11.10-1",
    VM_SIZE_PATTERN: "an Azure VM size name, like Standard_ND96isr_H100_v5",
    IMAGE_PATTERN: "a marketplace image URN publisher:offer:sku:version, like "
    "microsoft-dsvm:ubuntu-hpc:2204:latest, or an Azure Compute Gallery image ID, like "
    "/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Compute/galleries/<gallery>/images/<image>"
    "[/versions/<version>]",
    IMAGE_URN_PATTERN: "a marketplace image URN "
    "publisher:offer:sku:version, like almalinux:almalinux-x86_64:8-gen2:latest",
    r"^/[A-Za-z0-9_./-]*$": "an absolute path of letters, digits and . _ - /, like /mnt/nvme",
    r"^[a-z_][a-z0-9_-]{0,31}$": "a Linux user name: up to 32 lowercase letters, digits, _ or -, like hpcadmin",
    r"^\d{4}-\d{2}-\d{2} ([01]\d|2[0-3]):[0-5]\d$": "a date and 24-hour time, like 2025-01-15 02:00",
    r"^\d{2}:[0-5]\d$": "hours and minutes hh:mm, like 05:00",
    r"^[a-z][a-z0-9]{1,11}$": "2 to 12 lowercase letters or digits starting with a letter, like energy",
    r"^[-_]?$": "one hyphen, one underscore, or nothing",
    r"^[a-z0-9]{0,6}$": "up to 6 lowercase letters or digits, like a1b2",
    r"^[a-zA-Z][a-zA-Z0-9-]{0,39}$": "up to 40 letters, digits or hyphens starting with a letter, like scratch",
    r"^([01]\d|2[0-3]):[0-5]\d$": "a 24-hour time hh:mm, like 02:00",
    r"^([01]\d|2[0-3]):(00|30)$": "a 24-hour time on the hour or half hour, like 01:00 or 23:30",
    r"^[-\w._()]+$": "1 to 90 letters, digits, - _ . ( ), like NetworkWatcherRG",
    r"^[-\w._]+$": "1 to 80 letters, digits, - _ ., like NetworkWatcher_westeurope",
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$": "up to 80 letters, digits, _ . or - starting with a letter or digit, "
    "like snet-compute",
    r"^[0-7]{4}$": "four octal digits, a Unix mode like 0755 or 1777",
    r"^[0-9a-f]{64}$": "a SHA-256 digest: 64 lowercase hexadecimal digits, like "
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    r"^[a-z][a-z0-9_-]{0,14}$": "up to 15 lowercase letters, digits, _ or - starting with a letter, like gpu",
    r"^[0-9a-zA-Z-]{1,127}$": "a Key Vault secret name: 1 to 127 letters, digits or hyphens, like cc-admin-password",
    r"^[A-Za-z0-9][A-Za-z0-9.-]*$": "a host name or IP address, like slurmdb.mysql.database.azure.com or 10.1.2.4",
    r"^[A-Za-z0-9_.@-]{1,80}$": "a database user name: up to 80 letters, digits, _ . @ or -, like slurmdbd",
    r"^[A-Za-z0-9_=,.-]+$": "NFS mount options separated by commas, like rw,hard,vers=3,nconnect=8",
    r"^Standard_[A-Za-z0-9_]{2,30}$": "a MySQL flexible server compute size, like Standard_B2ms or Standard_D2ads_v5",
    r"^[a-z_][a-z0-9_]{0,31}$": "up to 32 lowercase letters, digits or _ starting with a letter or _, like slurmdbd",
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]$": (
        "a DNS domain name of dot-separated labels, like contoso.com or contosoai.onmicrosoft.com"
    ),
}


def plain(pattern: str) -> str:
    """The plain words for a pattern; unknown ones still never leak the expression itself."""
    return "expected " + PLAIN.get(pattern, "a value in the documented format (see hpclz schema)")
