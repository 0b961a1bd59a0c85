"""Every exit path a user can cause, for every command that takes `-o json`: a full envelope with `errors`
filled, the documented exit code, and nothing on stdout but the envelope."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from hpclz.errors import ExitCode
from hpclz.output import ENVELOPE_KEYS
from tests.conftest import REPO, RunCli

JSON_COMMANDS: dict[str, list[str]] = {
    # command -> arguments after the config that keep it from reaching Azure or Slurm
    "validate": [],
    "render": ["--no-gates", "--out", "{tmp}/rendered"],
    "plan": [],
    "deploy": ["--yes"],
    "destroy": ["--yes"],
    "verify": [],
    "state show": [],
    "state unlock": ["--force"],
}


def _config_paths(tmp: Path) -> dict[str, tuple[Path, ExitCode, str]]:
    """Broken configs: (path, exit code, fragment of the one error's message)."""
    bad = tmp / "bad.yaml"
    bad.write_text((REPO / "configs" / "energy.yaml").read_text().replace("max_nodes: 128", "max_nodes: true", 1))
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


@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
@pytest.mark.parametrize("case", ["missing", "model", "alias-bomb", "fifo", "directory"])
def test_config_errors_give_a_json_envelope(run_cli: RunCli, tmp_path: Path, command: str, case: str) -> None:
    path, code, fragment = _config_paths(tmp_path)[case]
    extra = [a.replace("{tmp}", str(tmp_path)) for a in JSON_COMMANDS[command]]
    result = run_cli(*command.split(), str(path), *extra, "-o", "json")
    assert result.exit_code == code, result.stdout + result.stderr
    envelope = _envelope(result.stdout)
    assert envelope["command"] == command.split()[-1] or envelope["command"] == command
    assert envelope["exit_code"] == code
    assert any(fragment in e["message"] for e in envelope["errors"]), envelope["errors"]
    if case == "model":
        (error,) = envelope["errors"]
        assert (error["file"], error["path"]) == (str(path), "compute.partitions[hbv4].max_nodes")
        assert error["line"] > 1


@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
@pytest.mark.parametrize("mistake", [["--no-such-option"], []], ids=["unknown-option", "missing-argument"])
def test_usage_errors_give_a_json_envelope(run_cli: RunCli, command: str, mistake: list[str]) -> None:
    args = [*command.split(), *(["zone.yaml"] if mistake else []), *mistake, "-o", "json"]
    result = run_cli(*args)
    assert result.exit_code == ExitCode.USAGE
    envelope = _envelope(result.stdout)
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
