"""Every exit path a user can cause, for every command that takes `-o json`: a full envelope with `errors`
filled, the documented exit code, and nothing on stdout but the envelope."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from hpclz.cli import command_tree
from hpclz.cli.table import COMMANDS
from hpclz.errors import ExitCode
from hpclz.output import ENVELOPE_KEYS
from tests.conftest import REPO, CliResult, RunCli

JSON_COMMANDS = sorted(c.name for c in COMMANDS if c.takes_json)
# Arguments after the config that keep a command from reaching Azure or Slurm, or that it requires after CONFIG;
# every other command of the table gets none.
AFTER_CONFIG: dict[str, list[str]] = {
    "render": ["--no-gates", "--out", "{tmp}/rendered"],
    "deploy": ["--yes"],
    "destroy": ["--yes"],
    "state unlock": ["--force"],
    "state forget": ["Microsoft.Network/virtualNetworks/vnet-x"],
    "state adopt": ["Microsoft.Network/virtualNetworks/vnet-x"],
    "nodes roll": ["--all", "--dry-run"],
    "nodes repair": ["--state-dir", "{tmp}/state"],
}


def _parser(command: str) -> Any:
    """The click command that parses `hpclz COMMAND`, from the same tree the CLI runs."""
    node = command_tree()
    for word in command.split():
        node = node.commands[word]
    return node


def _arguments(command: str) -> list[Any]:
    return [p for p in _parser(command).params if p.param_type_name == "argument"]


CONFIG_COMMANDS = [c for c in JSON_COMMANDS if [a.metavar for a in _arguments(c)][:1] == ["CONFIG"]]
REQUIRED_ARGUMENT_COMMANDS = [c for c in JSON_COMMANDS if any(a.required for a in _arguments(c))]


def test_the_table_names_what_the_tests_cover() -> None:
    """Every command with -o json is covered below; the extra arguments name only commands that exist."""
    assert len(JSON_COMMANDS) == 18, JSON_COMMANDS  # validate .. state adopt: a dropped command shows here
    assert set(AFTER_CONFIG) <= set(JSON_COMMANDS)
    # explain takes a rule ID, nodes incidents a state folder: neither reads a config
    assert set(CONFIG_COMMANDS) == set(JSON_COMMANDS) - {"explain", "nodes incidents"}


def _config_paths(tmp: Path) -> dict[str, tuple[Path, ExitCode, str]]:
    """Broken configs: (path, exit code, fragment of the one error's message)."""
    bad = tmp / "bad.yaml"
    bad.write_text((REPO / "configs" / "energy.yaml").read_text().replace("max_nodes: 100", "max_nodes: true", 1))
    laughs = tmp / "laughs.yaml"
    laughs.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))
    )
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    return {
        "missing": (tmp / "missing.yaml", ExitCode.CONFIG_INVALID, "config file not found"),
        "model": (bad, ExitCode.CONFIG_INVALID, "expected an integer, not a boolean"),
        "alias-bomb": (laughs, ExitCode.CONFIG_INVALID, "aliases expand"),
        "fifo": (fifo, ExitCode.CONFIG_INVALID, "not a regular file"),
        "directory": (tmp, ExitCode.CONFIG_INVALID, "is a directory"),
    }


def _envelope(stdout: str) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert envelope["ok"] is False
    assert envelope["errors"], "an error exit must say why in `errors`"
    return envelope


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
@pytest.mark.parametrize("case", ["missing", "model", "alias-bomb", "fifo", "directory"])
def test_config_errors_give_a_json_envelope(run_cli: RunCli, tmp_path: Path, command: str, case: str) -> None:
    path, code, fragment = _config_paths(tmp_path)[case]
    extra = [a.replace("{tmp}", str(tmp_path)) for a in AFTER_CONFIG.get(command, [])]
    result = run_cli(*command.split(), str(path), *extra, "-o", "json")
    assert result.exit_code == code, result.stdout + result.stderr
    envelope = _envelope(result.stdout)
    assert envelope["command"] == command
    assert envelope["exit_code"] == code
    assert any(fragment in e["message"] for e in envelope["errors"]), envelope["errors"]
    if case == "model":
        (error,) = envelope["errors"]
        assert (error["file"], error["path"]) == (str(path), "compute.partitions[hbv4].max_nodes")
        assert error["line"] > 1


@pytest.mark.parametrize("command", JSON_COMMANDS)
def test_an_unknown_option_gives_a_json_envelope_naming_the_full_command(run_cli: RunCli, command: str) -> None:
    result = run_cli(*command.split(), "zone.yaml", "--no-such-option", "-o", "json")
    _usage_envelope(result, command)
    assert "No such option" in result.stderr


@pytest.mark.parametrize("command", REQUIRED_ARGUMENT_COMMANDS)
def test_a_missing_argument_gives_a_json_envelope_naming_the_full_command(run_cli: RunCli, command: str) -> None:
    result = run_cli(*command.split(), "-o", "json")
    _usage_envelope(result, command)
    assert "Missing argument" in result.stderr


def _usage_envelope(result: CliResult, command: str) -> None:
    assert result.exit_code == ExitCode.USAGE, result.stdout + result.stderr
    envelope = _envelope(result.stdout)
    assert envelope["command"] == command
    assert envelope["exit_code"] == ExitCode.USAGE
    assert envelope["errors"][0]["code"] == "usage"
    assert "Usage:" in result.stderr  # people still get click's usage text


@pytest.mark.parametrize("spelling", [["-o", "json"], ["--output", "json"], ["--output=json"]])
def test_every_spelling_of_json_output_is_honoured_for_usage_errors(run_cli: RunCli, spelling: list[str]) -> None:
    result = run_cli("validate", "zone.yaml", "--bogus", *spelling)
    assert _envelope(result.stdout)["command"] == "validate"


@pytest.mark.parametrize("command", ["plan", "render"])
def test_out_onto_the_config_gives_a_json_envelope(run_cli: RunCli, tmp_path: Path, command: str) -> None:
    zone = tmp_path / "lz.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", zone)
    gates = ["--no-gates"] if command == "render" else []  # the gates are not what this test is about
    result = run_cli(command, str(zone), "--out", str(zone), *gates, "-o", "json")
    assert result.exit_code == ExitCode.USAGE
    assert _envelope(result.stdout)["errors"][0]["message"].startswith(str(zone))
