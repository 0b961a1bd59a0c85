"""The loader bounds what it reads: every abusive file ends fast in one located line and exit 3."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from hpclz.config import bounds
from tests.conftest import REPO, RunCli

BASE = (REPO / "configs" / "energy.yaml").read_text()

# The classic "billion laughs" (en.wikipedia.org/wiki/Billion_laughs_attack, YAML form): nine anchors, each
# a list of nine aliases of the previous one; about 5 KB that expands to 10^9 strings.
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
# A file PyYAML's documentation warns about: yaml.load with this tag runs a shell command
# (pyyaml.org/wiki/PyYAMLDocumentation, "Loading YAML": "yaml.load is as powerful as pickle.loads").
PYTHON_TAG = "metadata: !!python/object/apply:os.system ['echo pwned']\n"

TEXT_CASES = [
    # (id, text, expected message fragment, expected line)
    ("billion-laughs", LAUGHS, f"aliases expand to more than {bounds.MAX_EXPANDED_NODES} nodes", 6),
    ("deep-flow-sequences", "a: " + "[" * 5000 + "]" * 5000, f"nesting deeper than {bounds.MAX_DEPTH}", 1),
    ("deep-block-mappings", "".join(f"{'  ' * i}k{i}:\n" for i in range(200)), "nesting deeper", 65),
    (
        "deep-through-aliases",
        "a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*a" + "]" * 30,
        "aliases expand",
        2,
    ),
    ("many-aliases", "a: &a x\nb: [" + ", ".join(["*a"] * 1001) + "]\n", f"more than {bounds.MAX_ALIASES} aliases", 2),
    ("huge-integer", "metadata:\n  name: " + "9" * 5000 + "\n", "an integer of 5000 digits", 2),
    ("huge-hex-integer", "a: 0x" + "f" * 200 + "\n", "an integer of", 1),
    ("python-tag", PYTHON_TAG, "YAML tag '!!python/object/apply:os.system' is not allowed", 1),
    ("custom-tag", "metadata: !secret x\n", "YAML tag '!secret' is not allowed", 1),
    ("nul-byte", "metadata:\n  name: a\x00b\n", "character U+0000 is not allowed", 2),
    ("escape-char", "metadata:\n  name: a\x1bb\n", "character U+001B is not allowed", 2),
]


@pytest.mark.parametrize(("text", "fragment", "line"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
def test_abusive_text_is_one_located_line(run_cli: RunCli, tmp_path: Path, text: str, fragment: str, line: int) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(text, encoding="utf-8")
    result = run_cli("validate", str(config))
    assert result.exit_code == 3
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    match = re.match(rf"^error: {re.escape(str(config))}:(\d+):\d+: <root>: (.*)$", lines[0])
    assert match, lines[0]
    assert int(match.group(1)) == line
    assert fragment in match.group(2)


PIN = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"  # the preset's pinned node image (docs/patching.md)


def test_core_tags_and_anchors_within_bounds_still_load() -> None:
    from hpclz.config import load_config_text

    svc = f"{{vm_size: Standard_D8as_v5, image: {PIN}}}"
    text = BASE.replace('costCenter: "4711"', "costCenter: !!str 4711", 1)
    assert f"  scheduler: {svc}" in text and f"  login: {{vm_size: Standard_D8as_v5, count: 1, image: {PIN}}}" in text
    text = text.replace(f"  scheduler: {svc}", f"  scheduler: &svc {svc}", 1)
    text = text.replace(
        f"  login: {{vm_size: Standard_D8as_v5, count: 1, image: {PIN}}}", "  login: {<<: *svc, count: 1}", 1
    )
    config = load_config_text(text).config
    assert config.metadata.tags["costCenter"] == "4711"
    assert config.compute.login.vm_size == "Standard_D8as_v5" and config.compute.login.image == PIN


def test_limits_are_documented_with_their_values() -> None:
    doc = (REPO / "docs" / "config-limits.md").read_text()
    for name, value, _ in bounds.LIMITS:
        assert f"| `{name}` | {value} |" in doc


def _refused(run_cli: RunCli, path: str, fragment: str) -> None:
    result = run_cli("validate", path)
    assert result.exit_code == 3
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: ")
    assert fragment in line


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_before_reading(run_cli: RunCli, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} absent on this system")
    _refused(run_cli, device, "is not a regular file")


def test_fifo_without_writer_is_refused_without_blocking(run_cli: RunCli, tmp_path: Path) -> None:
    fifo = tmp_path / "zone.yaml"
    os.mkfifo(fifo)
    _refused(run_cli, str(fifo), "is not a regular file")


def test_directory_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    _refused(run_cli, str(tmp_path), "is a directory")


def test_oversized_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "zone.yaml"
    config.write_text(BASE + "#" * bounds.MAX_CONFIG_BYTES)
    _refused(run_cli, str(config), f"a config may be at most {bounds.MAX_CONFIG_BYTES} bytes")


def test_not_utf8_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "zone.yaml"
    config.write_bytes(BASE.encode("utf-16"))
    _refused(run_cli, str(config), "not UTF-8 text")


def test_unreadable_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    config = tmp_path / "zone.yaml"
    config.write_text(BASE)
    config.chmod(0)
    _refused(run_cli, str(config), "cannot read config: Permission denied")


@pytest.mark.parametrize("tag", ["!!int", "!!float", "!!binary", "!!timestamp", "!!set"])
def test_other_core_tags_are_refused(tag: str) -> None:
    from hpclz.config import load_config_text
    from hpclz.errors import ConfigError

    with pytest.raises(ConfigError, match=f"YAML tag '{re.escape(tag)}'"):
        load_config_text(BASE.replace("max_nodes: 100", f"max_nodes: {tag} 100", 1))
