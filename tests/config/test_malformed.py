"""A table of config mistakes: each must give one located line, exit 3, and no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli

BASE = (REPO / "configs" / "energy.yaml").read_text()


def _edit(old: str, new: str) -> str:
    assert old in BASE, f"fixture drift: {old!r} not in energy.yaml"
    return BASE.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


CASES = [
    # (id, config text, expected path, message fragment, line marker)
    (
        "wrong-type",
        _edit("max_nodes: 100", "max_nodes: lots"),
        "compute.partitions[hbv4].max_nodes",
        "valid integer",
        "max_nodes: lots",
    ),
    (
        "unknown-key-suggests",
        _edit("  nat_gateway: {enabled: true}", "  nat_gatway: {enabled: true}"),
        "network.nat_gatway",
        "did you mean 'nat_gateway'",
        "nat_gatway",
    ),
    (
        "unknown-key-nested-in-list",
        _edit("      vm_size: Standard_HB120rs_v3", "      vmsize: Standard_HB120rs_v3"),
        "compute.partitions[hbv3].vmsize",
        "did you mean 'vm_size'",
        "vmsize:",
    ),
    (
        "unknown-key-lists-allowed",
        _edit("  nat_gateway: {enabled: true}", "  nat_gateway: {enabled: true}\n  xyzzy: 1"),
        "network.xyzzy",
        "allowed keys: vnet, nsg_rules, bastion",
        "xyzzy:",
    ),
    (
        "bad-subscription-guid",
        _edit("  # subscription_id: 00000000", "  subscription_id: sub-1234 # 00000000"),
        "metadata.subscription_id",
        "expected a GUID like 00000000-0000-0000-0000-000000000000 (got 'sub-1234')",
        "subscription_id: sub-1234",
    ),
    (
        "missing-required",
        _edit("  location: southcentralus     # one region", "  # location removed"),
        "metadata.location",
        "required key 'location' is missing",
        "metadata:",
    ),
    (
        "out-of-range",
        _edit("capacity_tib: 48 ", "capacity_tib: 2 "),
        "storage.lustre.capacity_tib",
        "greater than or equal to 4",
        "capacity_tib: 2",
    ),
    (
        "bad-union-tag",
        _edit("    mode: new                  # new | existing", "    mode: shared                  #"),
        "identity.key_vault.mode",
        "'shared' is not a valid mode",
        "mode: shared",
    ),
    (
        "bad-cidr",
        _edit("lustre: {cidr: 10.20.2.0/24}", "lustre: {cidr: 10.20.2.0/33}"),
        "network.vnet.subnets.lustre.cidr",
        "valid IPv4 network",
        "10.20.2.0/33",
    ),
    (
        "host-bits-set",
        _edit("lustre: {cidr: 10.20.2.0/24}", "lustre: {cidr: 10.20.2.7/24}"),
        "network.vnet.subnets.lustre.cidr",
        "IPv4 network",
        "10.20.2.7/24",
    ),
    (
        "bad-guid",
        _edit("readers: [dde85349-5401-4e33-9197-54cf1fcb7d7b]", "readers: [not-a-guid]"),
        "identity.groups.readers[0]",
        "expected a GUID",
        "not-a-guid",
    ),
    (
        "cyclecloud-entra-client-id-not-a-guid",
        _edit("client_id: 3f0c9a52-7d1e-4b8a-9c64-2e5b81d7a4f0", "client_id: cyclecloud-app"),
        "identity.cyclecloud_entra.client_id",
        "expected a GUID",
        "client_id: cyclecloud-app",
    ),
    (
        "cyclecloud-entra-endpoint-not-https",
        _edit(
            "tenant_id: b7e41d96-05a3-4f2c-8e19-6a3d2c9f7b15",
            "tenant_id: b7e41d96-05a3-4f2c-8e19-6a3d2c9f7b15\n    endpoint: http://login.microsoftonline.com",
        ),
        "identity.cyclecloud_entra.endpoint",
        "expected an https:// sign-in host",
        "endpoint: http://",
    ),
    (
        "bad-enum",
        _edit("environment: prod ", "environment: staging "),
        "metadata.environment",
        "'dev', 'test' or 'prod'",
        "environment: staging",
    ),
    (
        "spot-setting-on-regular",
        _edit("      max_nodes: 64\n", "      max_nodes: 64\n      eviction_policy: delete\n"),
        "compute.partitions[hbv3]",
        "eviction_policy applies only to priority: spot",
        "- name: hbv3",
    ),
    # Azure keeps MySQL flexible server backups 1 to 35 days
    # (learn.microsoft.com/azure/mysql/flexible-server/concepts-backup-restore#backup-retention).
    (
        "accounting-retention-over-35-days",
        _edit("backup_retention_days: 35", "backup_retention_days: 36"),
        "compute.accounting.backup_retention_days",
        "less than or equal to 35",
        "backup_retention_days: 36",
    ),
    # Storage of a MySQL flexible server starts at 20 GiB (concepts-service-tiers-storage).
    (
        "accounting-storage-under-20-gib",
        _edit("storage_gib: 32", "storage_gib: 10"),
        "compute.accounting.storage_gib",
        "greater than or equal to 20",
        "storage_gib: 10",
    ),
    (
        "bad-name-pattern",
        _edit("name: energy ", "name: Energy-Zone "),
        "metadata.name",
        "expected 2 to 12 lowercase letters or digits starting with a letter, like energy (got 'Energy-Zone')",
        "name: Energy-Zone",
    ),
]


@pytest.mark.parametrize(("text", "path", "fragment", "marker"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_mistake_gives_one_located_line(
    run_cli: RunCli, tmp_path: Path, text: str, path: str, fragment: str, marker: str
) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(text)
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    match = re.match(rf"^error: {re.escape(str(config))}:(\d+):(\d+): (\S+): (.*)$", lines[0])
    assert match, lines[0]
    line, _col, shown_path, message = match.groups()
    assert int(line) == _line_of(text, marker)
    assert shown_path == path
    assert fragment in message


def test_malformed_yaml_is_located(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("metadata:\n  name: x\n  tags: {a: 1\nnetwork: {}\n")
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert re.match(rf"^error: {re.escape(str(config))}:\d+:\d+: <root>: invalid YAML: ", result.stderr)


def test_duplicate_key_is_located(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "dup.yaml"
    config.write_text(BASE.replace("metadata:\n", "metadata:\n  name: first\n", 1))
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert "invalid YAML" in result.stderr and "duplicate key" in result.stderr


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("", "the file is empty"), ("- a\n- b\n", "expected a mapping"), ("schema_version: 1\n", "missing")],
    ids=["empty", "list-at-top", "only-version"],
)
def test_degenerate_files(run_cli: RunCli, tmp_path: Path, text: str, fragment: str) -> None:
    config = tmp_path / "z.yaml"
    config.write_text(text)
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert fragment in result.stderr
    assert all(line.startswith(f"error: {config}:") for line in result.stderr.splitlines())


def test_missing_file(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 3
    assert result.stderr.strip() == f"error: {tmp_path / 'nope.yaml'}: config file not found"


def test_json_surrogate_pair_escape_is_one_character(run_cli: RunCli, tmp_path: Path) -> None:
    from hpclz.config import load_config_text

    text = BASE.replace("workload: seismic", 'workload: "\\ud81f\\udd3b"', 1)
    assert load_config_text(text).config.metadata.tags["workload"] == "\U00017d3b"


def test_lone_surrogate_escape_is_a_located_error(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(BASE.replace("workload: seismic", 'workload: "\\ud81f"', 1))
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert f"{config}:{_line_of(BASE, 'workload: seismic')}:" in result.stderr
