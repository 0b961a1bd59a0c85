"""The JSON envelope is a contract: scripts parse its top-level keys."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz import services
from hpclz.cli.table import COMMANDS, Command
from hpclz.output import ENVELOPE_KEYS
from tests.conftest import REPO, RunCli

FINDING_KEYS = {"rule_id", "severity", "title", "message", "path", "file", "line", "column", "fix", "docs"}
ERROR_KEYS = {"code", "message", "file", "line", "column", "path"}


def test_success_envelope_has_the_fixed_keys(run_cli: RunCli) -> None:
    result = run_cli("validate", str(REPO / "configs" / "energy.yaml"), "--output", "json")
    envelope = json.loads(result.stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert envelope["envelope_version"] == "1"
    assert envelope["command"] == "validate"
    assert envelope["ok"] is True and envelope["exit_code"] == result.exit_code == 0
    assert set(envelope["result"]) == {"file", "fail_level", "counts", "suppressed", "rules_run"}
    assert set(envelope["result"]["counts"]) == {"error", "warning", "info"}
    for finding in envelope["findings"]:
        assert set(finding) == FINDING_KEYS


def test_error_envelope_has_the_fixed_keys(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata: {name: x}\n")
    result = run_cli("validate", str(bad), "-o", "json")
    envelope = json.loads(result.stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert envelope["ok"] is False and envelope["exit_code"] == result.exit_code == 3
    assert envelope["errors"], "a config error must be listed"
    for error in envelope["errors"]:
        assert set(error) == ERROR_KEYS
        assert error["file"] == str(bad) and error["line"] >= 1
    assert result.stderr == ""


def _service(spec: str) -> Callable[..., Any]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _imported(function: Callable[..., Any]) -> set[str]:
    """`module:name` for every `from module import name` in a function's body (the CLI imports services there)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return {
        f"{node.module}:{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def _returns_command_result(function: Callable[..., Any]) -> bool:
    return str(inspect.signature(function).return_annotation).startswith("CommandResult[")


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.takes_json], ids=lambda c: c.name)
def test_every_json_command_names_services_that_return_one_command_result(command: Command) -> None:
    """One result type for every command: the CLI's printers (views, envelope) take nothing else."""
    assert command.services, f"{command.name} prints -o json, so the table must name the service it calls"
    for spec in command.services:
        service = _service(spec)
        assert _returns_command_result(service), f"{spec}: {inspect.signature(service).return_annotation}"
        assert spec in _imported(command.parse), f"{command.name} never imports {spec}"


def test_every_service_that_returns_a_command_result_is_in_the_command_table() -> None:
    """A service no command names would escape the test above."""
    named = {spec for c in COMMANDS for spec in c.services}
    found = set()
    for info in pkgutil.iter_modules(services.__path__):
        module = importlib.import_module(f"{services.__name__}.{info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if (
                function.__module__ == module.__name__
                and not name.startswith("_")
                and _returns_command_result(function)
            ):
                found.add(f"{module.__name__}:{name}")
    assert found == named


def test_every_service_takes_one_frozen_options_object() -> None:
    """One typed argument style for every command: a frozen dataclass of its options, built by the CLI."""
    import dataclasses
    import importlib
    import inspect
    import pkgutil
    import typing

    import hpclz.services

    commands = []
    for info in pkgutil.iter_modules(hpclz.services.__path__):
        module = importlib.import_module(f"hpclz.services.{info.name}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            returns = str(inspect.signature(func).return_annotation)
            is_command = returns.startswith("CommandResult[") or name in ("write_preset", "write_config_schema")
            if func.__module__ != module.__name__ or name.startswith("_") or not is_command:
                continue
            commands.append(f"{module.__name__}.{name}")
            hints = {k: v for k, v in typing.get_type_hints(func).items() if k != "return"}
            if not hints:
                continue  # a command with no options at all (`hpclz explain --list`)
            assert len(hints) == 1, f"{module.__name__}.{name} takes {list(hints)}"
            (options,) = hints.values()
            assert isinstance(options, type) and dataclasses.is_dataclass(options), (
                f"{module.__name__}.{name}: {options} is not a dataclass"
            )
            params = getattr(options, "__dataclass_params__", None)
            assert params is not None and params.frozen, f"{module.__name__}.{name}: {options.__name__} is not frozen"
    assert len(commands) >= 16, commands  # every command of the CLI, nodes and checkpoints with two each


def test_changes_present_is_a_success_in_the_envelope() -> None:
    """terraform's detailed exit code 2 means success with changes: `ok` must say so, 1 must not."""
    from hpclz.errors import ExitCode
    from hpclz.output import CommandResult, ResultBody

    class Body(ResultBody):
        file: str = "lz.yaml"

    changed = CommandResult(command="plan", payload=Body(), exit_code=ExitCode.CHANGES_PRESENT).envelope()
    failed = CommandResult(command="plan", payload=Body(), exit_code=ExitCode.FAILED).envelope()
    assert (changed.ok, changed.exit_code, changed.result) == (True, 2, {"file": "lz.yaml"})
    assert (failed.ok, failed.exit_code) == (False, 1)
    assert tuple(changed.model_dump()) == ENVELOPE_KEYS
