from __future__ import annotations

from pathlib import Path

import pytest

from hpclz import __version__
from hpclz.cli.table import command_named
from hpclz.config import load_config
from tests.conftest import RunCli


def test_version(run_cli: RunCli) -> None:
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"hpclz {__version__}"


def test_unknown_option_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("validate", "--no-such-flag", "x.yaml")
    assert result.exit_code == 64
    assert "No such option" in result.stderr


def test_init_writes_a_preset_that_validates(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "zone.yaml"
    result = run_cli("init", "--preset", "finance", "--out", str(target))
    assert result.exit_code == 0, result.stderr
    assert load_config(target).config.metadata.name == "riskgrid"


def test_init_refuses_to_overwrite(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "zone.yaml"
    target.write_text("mine")
    result = run_cli("init", "--preset", "energy", "--out", str(target))
    assert result.exit_code == 64
    assert "already exists" in result.stderr
    assert target.read_text() == "mine"


def test_init_unknown_preset_lists_the_choices(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("init", "--preset", "pharma", "--out", str(tmp_path / "z.yaml"))
    assert result.exit_code == 64
    assert "ai-training, energy, finance, manufacturing" in result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--verbose", "checkpoints", "manifest", "lz.yaml"], "checkpoints manifest"),
        (["prices", "refresh", "--bogus"], "prices refresh"),
        (["validate", "-o", "json", "lz.yaml"], "validate"),  # an option's value never completes a name
        (["state", "--bogus"], "state"),
        (["bogus", "lz.yaml"], "hpclz"),
        ([], "hpclz"),
    ],
)
def test_a_command_line_names_its_command_from_the_table(args: list[str], named: str) -> None:
    assert command_named(args) == named


def _help(tree: object, words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    main = getattr(tree, "main")  # noqa: B009 - the click command typer built; typer does not type it
    main(args=[*words, "--help"], prog_name="hpclz", standalone_mode=False)
    return capsys.readouterr().out


def test_a_command_line_builds_only_its_command_and_parses_it_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    """main() builds the tree for the first word only (hpclz.cli.command_tree); each command's help, which shows
    every parameter it parses, must read the same as in the whole tree, and the pruned tree holds no other."""
    from hpclz.cli import command_tree
    from hpclz.cli.table import COMMANDS, GROUPS

    for command in COMMANDS:
        pruned = command_tree(command.words[0])
        assert _help(pruned, command.words, capsys) == _help(command_tree(), command.words, capsys), command.name
        listed = set(getattr(pruned, "commands"))  # noqa: B009
        assert listed == {command.words[0]}, command.name
    assert len(set(getattr(command_tree(), "commands"))) == len({c.words[0] for c in COMMANDS}) > len(GROUPS)  # noqa: B009
