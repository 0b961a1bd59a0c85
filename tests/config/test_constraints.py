"""What Azure or Linux would refuse, or what would break a node, is refused by validate with one located line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpclz.config.constraints import RESERVED_ADMIN_USERNAMES
from tests.conftest import REPO, RunCli
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY

BASE = (REPO / "configs" / "energy.yaml").read_text()
# Azurite's published development account (learn.microsoft.com/azure/storage/common/storage-use-azurite,
# "Connection strings"): a real, documented connection string, safe to commit because it is public.
AZURITE_CONNECTION = (
    f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
    f"BlobEndpoint=http://127.0.0.1:10000/{ACCOUNT};"
)
# The SAS example from learn.microsoft.com/rest/api/storageservices/create-service-sas ("Service SAS example").
SAS_URL = (
    "https://myaccount.blob.core.windows.net/sascontainer/sasblob.txt?sv=2019-02-02&st=2019-04-29T22%3A18%3A26Z"
    "&se=2019-04-30T02%3A23%3A26Z&sr=b&sp=rw&sip=168.1.5.60-168.1.5.70&spr=https&sig=Z%2FRHIX5Xcg0Mq2rqI3OlWTjEg2tYkboXr1P9ZUXDtkk%3D"
)


def _edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, f"fixture drift: {old!r} not in energy.yaml"
    return text.replace(old, new, 1)


def _with_vault_secret(value: str) -> str:
    # The energy preset's vault already stores the accounting password: the secret joins that block.
    return _edit("    secrets:\n", f"    secrets:\n      licence-key: '{value}'\n")


CASES = [
    # (id, config text, expected path, message fragment, line marker)
    (
        "bool-as-int",
        _edit("max_nodes: 100", "max_nodes: true"),
        "compute.partitions[hbv4].max_nodes",
        "expected an integer, not a boolean",
        "max_nodes: true",
    ),
    (
        "bool-as-float",
        _edit("      max_nodes: 64\n", "      max_nodes: 64\n      priority: spot\n      spot_max_price: false\n"),
        "compute.partitions[hbv3].spot_max_price",
        "expected a number, not a boolean",
        "spot_max_price: false",
    ),
    (
        "anchored-bool-as-int",
        _edit("      max_nodes: 64\n      infiniband: true\n", "      max_nodes: &yes true\n      infiniband: *yes\n"),
        "compute.partitions[hbv3].max_nodes",
        "expected an integer, not a boolean",
        "max_nodes: &yes true",
    ),
    (
        "bool-as-budget",
        BASE + "\nbudget: {monthly_usd: true}\n",
        "budget.monthly_usd",
        "expected a number, not a boolean",
        "budget: {monthly_usd: true}",
    ),
    (
        "bool-in-quota",
        _edit("standardHBv3Family: 7680", "standardHBv3Family: true"),
        "compute.quotas.standardHBv3Family",
        "not a boolean",
        "standardHBv3Family: true",
    ),
    (
        "admin-root",
        _edit("admin_username: hpcadmin", "admin_username: root"),
        "identity.admin_username",
        "'root' is a user name Azure reserves",
        "admin_username: root",
    ),
    (
        "admin-admin",
        _edit("admin_username: hpcadmin", "admin_username: admin"),
        "identity.admin_username",
        "reserves",
        "admin_username: admin",
    ),
    (
        "lustre-at-root",
        _edit("mount_point: /lustre", "mount_point: /"),
        "storage.lustre.mount_point",
        "'/' is a system directory",
        "mount_point: /\n",
    ),
    (
        "lustre-at-etc",
        _edit("mount_point: /lustre", "mount_point: /etc"),
        "storage.lustre.mount_point",
        "inside the system tree /etc",
        "mount_point: /etc",
    ),
    (
        "lustre-under-usr",
        _edit("mount_point: /lustre", "mount_point: /usr/local/lustre"),
        "storage.lustre.mount_point",
        "inside the system tree /usr",
        "mount_point: /usr/local",
    ),
    (
        "schema-version-true",
        _edit("schema_version: 1", "schema_version: true"),
        "schema_version",
        "must be the number 1, not true",
        "schema_version: true",
    ),
    (
        # Azure allows 50 tags per resource; hpclz adds 4, so 47 of the user's are too many (3 here + 44).
        "forty-seven-tags",
        _edit(
            "    workload: seismic\n", "    workload: seismic\n" + "\n".join(f"    t{i}: x" for i in range(44)) + "\n"
        ),
        "metadata.tags",
        "47 tags; Azure allows 50 per resource",
        "  tags:",
    ),
    (
        "bidi-override-in-a-tag",
        _edit("    workload: seismic", '    workload: "seis\u202emic"'),
        "metadata.tags.workload",
        "invisible character U+202E",
        "    workload:",
    ),
    (
        "byte-order-mark-in-a-tag-name",
        _edit("    workload: seismic", '    "\ufeffworkload": seismic'),
        r"metadata.tags.\ufeffworkload",
        "invisible character U+FEFF",
        'workload": seismic',
    ),
    (
        # POSIX keeps a leading "//" through normalisation; Linux reads it as "/": checked after collapsing.
        "lustre-double-slash-home",
        _edit("mount_point: /lustre", "mount_point: //home"),
        "storage.lustre.mount_point",
        "'/home' is a system directory",
        "mount_point: //home",
    ),
    (
        "lustre-dotdot",
        _edit("mount_point: /lustre", "mount_point: /tmp/../boot"),
        "storage.lustre.mount_point",
        "'.' or '..'",
        "mount_point: /tmp/../boot",
    ),
    (
        "scratch-etc",
        _edit("scratch: {source: nvme, path: /scratch}", "scratch: {source: nvme, path: /etc}"),
        "storage.scratch.path",
        "system tree /etc",
        "path: /etc",
    ),
    (
        "nvme-over-tmp",
        _edit(
            "nvme_scratch: {enabled: true, mount_point: /mnt/nvme}", "nvme_scratch: {enabled: true, mount_point: /tmp}"
        ),
        "compute.partitions[hbv4].nvme_scratch.mount_point",
        "'/tmp' is a system directory",
        "mount_point: /tmp",
    ),
    (
        "duplicate-container",
        _edit(
            "      - {name: checkpoints, purpose: checkpoints, versioning: true}",
            "      - {name: checkpoints, purpose: checkpoints, versioning: true}\n      - {name: checkpoints}",
        ),
        "storage.blob.containers",
        "blob container 'checkpoints' appears twice",
        "containers:\n",
    ),
    # The examples Microsoft.Maintenance documents are Windows IDs; IANA and invented names are refused.
    (
        "time-zone-invented",
        _edit("time_zone: UTC", "time_zone: Mars/Olympus"),
        "maintenance.window.time_zone",
        "not a time zone Azure Maintenance accepts",
        "time_zone: Mars/Olympus",
    ),
    (
        "time-zone-iana",
        _edit("time_zone: UTC", "time_zone: America/Los_Angeles"),
        "maintenance.window.time_zone",
        "write 'Pacific Standard Time' for America/Los_Angeles",
        "time_zone: America",
    ),
    (
        "nul-in-tag",
        _edit("workload: seismic", 'workload: "seis\\0mic"'),
        "metadata.tags.workload",
        "control character U+0000",
        "workload:",
    ),
    (
        "escape-in-key",
        _edit("workload: seismic", '"work\\x1bload": seismic'),
        "metadata.tags.work\\x1bload",
        "the key holds control character U+001B",
        'load": seismic',
    ),
    (
        "empty-env-reference",
        _with_vault_secret("${env:}"),
        "identity.key_vault.secrets.licence-key",
        "malformed secret reference",
        "licence-key:",
    ),
    (
        "uppercase-env-reference",
        _with_vault_secret("${ENV:LICENCE}"),
        "identity.key_vault.secrets.licence-key",
        "malformed secret reference",
        "licence-key:",
    ),
    (
        "reference-with-suffix",
        _with_vault_secret("${env:LICENCE}x"),
        "identity.key_vault.secrets.licence-key",
        "malformed secret reference",
        "licence-key:",
    ),
    (
        "reference-outside-secrets",
        _edit("workload: seismic", "workload: ${env:WORKLOAD}"),
        "metadata.tags.workload",
        "resolved only in identity.key_vault.secrets",
        "workload:",
    ),
    (
        "connection-string-in-tag",
        _edit("workload: seismic", f"workload: '{AZURITE_CONNECTION}'"),
        "metadata.tags.workload",
        "storage account key in a connection string",
        "workload:",
    ),
    (
        "sas-in-tag",
        _edit("workload: seismic", f"workload: '{SAS_URL}'"),
        "metadata.tags.workload",
        "shared access signature",
        "workload:",
    ),
    (
        "http-state-url",
        _edit("  backend: local ", "  backend: azure_blob\n  account_url: http://sthpclz.blob.core.windows.net\n  #"),
        "state.account_url",
        "an https:// storage account URL with no path",
        "account_url:",
    ),
]


@pytest.mark.parametrize(("text", "path", "fragment", "marker"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_with_one_located_line(
    run_cli: RunCli, tmp_path: Path, text: str, path: str, fragment: str, marker: str
) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(text)
    result = run_cli("validate", str(config))
    assert result.exit_code == 3, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    match = re.match(rf"^error: {re.escape(str(config))}:(\d+):(\d+): (.+?): (.*)$", lines[0], re.S)
    assert match, lines[0]
    line, _col, shown_path, message = match.groups()
    assert int(line) == next(
        i
        for i, text_line in enumerate(text.splitlines(), 1)
        if marker.rstrip("\n") in text_line and (not marker.endswith("\n") or text_line.endswith(marker.rstrip("\n")))
    )
    assert shown_path == path
    assert fragment in message


ACCEPTED = [
    ("documented-time-zones", _edit("time_zone: UTC", "time_zone: W. Europe Standard Time")),
    ("cen-australia", _edit("time_zone: UTC", "time_zone: Cen. Australia Standard Time")),
    ("env-reference", _with_vault_secret("${env:LICENCE_KEY}")),
    ("literal-vault-secret", _with_vault_secret(f"{AZURITE_CONNECTION}")),
    ("mount-below-mnt", _edit("mount_point: /lustre", "mount_point: /mnt/lustre")),
    (
        "mount-below-var",
        _edit("scratch: {source: nvme, path: /scratch}", "scratch: {source: nvme, path: /var/scratch}"),
    ),
    (
        "https-state-url",
        _edit("  backend: local ", "  backend: azure_blob\n  account_url: https://sthpclz.blob.core.windows.net\n  #"),
    ),
    ("admin-lookalike", _edit("admin_username: hpcadmin", "admin_username: admins")),
    (
        "forty-six-tags",
        _edit(
            "    workload: seismic\n", "    workload: seismic\n" + "\n".join(f"    t{i}: x" for i in range(43)) + "\n"
        ),
    ),
]


def test_a_long_rejected_value_is_elided() -> None:
    from hpclz.config import load_config_text
    from hpclz.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_config_text(_edit("name: energy ", f"name: {'x' * 900_000} "))
    assert len(str(caught.value)) < 400 and "(900000 characters)" in str(caught.value)


@pytest.mark.parametrize("text", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_near_misses_are_accepted(text: str) -> None:
    from hpclz.config import load_config_text

    load_config_text(text)


@pytest.mark.parametrize("name", sorted(RESERVED_ADMIN_USERNAMES))
def test_every_reserved_name_is_refused(name: str) -> None:
    from hpclz.config import load_config_text
    from hpclz.errors import ConfigError

    name_text = f"'{name}'"  # quoted: "1" and "123" stay strings
    with pytest.raises(ConfigError, match=r"identity\.admin_username"):
        load_config_text(_edit("admin_username: hpcadmin", f"admin_username: {name_text}"))


# Azure's limits on the two names (learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules):
# a resource group is 1-90 letters, digits, - _ . ( ) (Unicode letters and digits included), a Network Watcher 1-80
# letters, digits, - _ . ; the model says so with a pattern for the characters and max_length for the length.
WATCHER = "  flow_logs: {{enabled: true, network_watcher: {{resource_group: '{group}', name: '{name}'}}}}\n"


@pytest.mark.parametrize(
    ("group", "name", "error"),
    [
        ("g" * 90, "n" * 80, None),
        ("Réseau_(prod).1", "Wächter-1.westeurope", None),
        ("g" * 91, "nw", "network.flow_logs.network_watcher.resource_group: String should have at most 90 characters"),
        ("rg", "n" * 81, "network.flow_logs.network_watcher.name: String should have at most 80 characters"),
        ("", "nw", "network.flow_logs.network_watcher.resource_group: expected 1 to 90 letters"),
        ("rg", "nw/x", "network.flow_logs.network_watcher.name: expected 1 to 80 letters"),
        ("rg+x", "nw", "network.flow_logs.network_watcher.resource_group: expected 1 to 90 letters"),
    ],
)
def test_network_watcher_names_keep_azures_lengths_and_characters(group: str, name: str, error: str | None) -> None:
    from hpclz.config import load_config_text
    from hpclz.errors import ConfigError

    text = _edit("network:\n", "network:\n" + WATCHER.format(group=group, name=name))
    if error is None:
        loaded = load_config_text(text)
        watcher = loaded.config.network.flow_logs.network_watcher
        assert (watcher.resource_group, watcher.name) == (group, name)
        return
    with pytest.raises(ConfigError) as caught:
        load_config_text(text)
    assert error in str(caught.value)
