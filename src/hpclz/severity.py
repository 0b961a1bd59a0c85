"""Severity of a finding. Standard library only: the CLI imports it before anything heavy."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank
