"""`hpclz validate`: shape (the model), then meaning (the registered config rules)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import LoadedConfig, load_config
from hpclz.errors import ConfigError, ConfigProblem, ExitCode, HpclzError
from hpclz.findings import Finding, Severity, count_by_severity
from hpclz.output import CommandResult, ResultBody
from hpclz.registry import CONFIG_RULES, all_rules
from hpclz.rules.base import run_rules
from hpclz.rules.context import ConfigContext


class ValidateResult(ResultBody):
    file: str
    fail_level: Severity
    findings: list[Finding] = Field(default_factory=list)
    suppressed: list[str] = Field(default_factory=list, description="IDs of findings silenced by suppression.")
    rules_run: int = 0

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.severity.at_least(self.fail_level)]

    @property
    def ok(self) -> bool:
        return not self.failing

    def json_body(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "fail_level": self.fail_level.value,
            "counts": count_by_severity(self.findings),
            "suppressed": self.suppressed,
            "rules_run": self.rules_run,
        }


def refuse_unknown_suppressions(loaded: LoadedConfig, suppress: Iterable[str]) -> None:
    """A misspelt ID would silently suppress nothing, so unknown IDs are refused where they were written.

    Every registered rule counts as known, live preflight rules included: a config may silence them for deploy.
    """
    known = {r.id for r in all_rules()}
    problems = []
    for i, rule_id in enumerate(loaded.config.suppress):
        if rule_id.upper() not in known:
            pos = loaded.source.locate(("suppress", i))
            message = f"unknown rule ID {rule_id!r} (hpclz explain --list shows every rule)"
            problems.append(ConfigProblem(loaded.file, pos.line, pos.column, f"suppress[{i}]", message, "unknown_rule"))
    if problems:
        raise ConfigError(problems)
    for rule_id in suppress:
        if rule_id.upper() not in known:
            raise HpclzError(
                f"--suppress {rule_id}: unknown rule ID (hpclz explain --list shows every rule)",
                exit_code=ExitCode.USAGE,
            )


def check_config(loaded: LoadedConfig, suppress: Iterable[str] = ()) -> tuple[list[Finding], list[Finding]]:
    """Run every config rule; suppression comes from the config's `suppress:` list and the caller, whose IDs
    must all be known (render, plan and deploy check configs here too)."""
    suppress = list(suppress)
    refuse_unknown_suppressions(loaded, suppress)
    return run_rules(CONFIG_RULES, ConfigContext(loaded), [*loaded.config.suppress, *suppress])


@dataclass(frozen=True)
class ValidateOptions:
    config: Path
    fail_level: Severity = Severity.ERROR  # findings at or above it fail
    suppress: tuple[str, ...] = ()  # rule IDs silenced with the config's `suppress:` list


def validate(opts: ValidateOptions) -> CommandResult[ValidateResult]:
    reported, suppressed = check_config(load_config(opts.config), opts.suppress)
    result = ValidateResult(
        file=str(opts.config),
        fail_level=opts.fail_level,
        findings=reported,
        suppressed=sorted({f.rule_id for f in suppressed}),
        rules_run=len(CONFIG_RULES),
    )
    code = ExitCode.OK if result.ok else ExitCode.FAILED
    return CommandResult(command="validate", payload=result, findings=reported, exit_code=code)
