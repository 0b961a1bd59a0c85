"""The JSON envelope is a contract: scripts parse its top-level keys."""

from __future__ import annotations

import json
from pathlib import Path

from hpclz.output import ENVELOPE_KEYS
from tests.conftest import REPO

FINDING_KEYS = {"rule_id", "severity", "title", "message", "path", "file", "line", "column", "fix", "docs"}
ERROR_KEYS = {"code", "message", "file", "line", "column", "path"}


def test_success_envelope_has_the_fixed_keys(run_cli) -> None:  # type: ignore[no-untyped-def]
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


def test_error_envelope_has_the_fixed_keys(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
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


def test_every_command_service_returns_one_command_result() -> None:
    """One result type for every command: the CLI's printers (views, envelope) take nothing else."""
    import inspect

    from hpclz.services import deploy, destroy, plan, render, state, validate, verify

    services = [
        deploy.deploy,
        destroy.destroy,
        plan.plan,
        render.render,
        state.show_state,
        state.unlock_state,
        validate.validate,
        verify.verify,
    ]
    for service in services:
        annotation = inspect.signature(service).return_annotation
        assert str(annotation).startswith("CommandResult["), f"{service.__module__}.{service.__name__}: {annotation}"


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
            assert dataclasses.is_dataclass(options), f"{module.__name__}.{name}: {options} is not a dataclass"
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
