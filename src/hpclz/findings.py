"""Findings: what a rule (config validator, template lint, verify check) reports."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hpclz.severity import Severity

__all__ = ["Finding", "Severity", "count_by_severity", "worst_severity"]


class Finding(BaseModel):
    """One problem (or notable fact) found by a rule, pointing at where to fix it."""

    model_config = ConfigDict(frozen=True)

    rule_id: str
    severity: Severity
    title: str
    message: str
    path: str = ""
    file: str | None = None
    line: int | None = None
    column: int | None = None
    fix: str = ""
    docs: str = ""
    # The rule's `repeats` (hpclz.rules.base.Rule): text output leaves such a report to --verbose. Not part of
    # the JSON envelope; carried here so the view need not import every rule family to ask.
    repeats: bool = Field(default=False, exclude=True)

    def location(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}:{self.column or 1}"
        return self.file or ""


def count_by_severity(findings: list[Finding]) -> dict[str, int]:
    counts = {s.value: 0 for s in Severity}
    for f in findings:
        counts[f.severity.value] += 1
    return counts


def worst_severity(findings: list[Finding]) -> Severity | None:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)
