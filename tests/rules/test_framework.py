"""The runner behind every rule family: a crashing rule becomes a finding, suppression is by ID."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config import load_config
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule, run_rules
from hpclz.rules.context import ConfigContext
from tests.conftest import REPO


class Crashes(Rule[ConfigContext]):
    """A deliberately broken rule."""

    id = "HPCLZ-NET-999"
    severity = Severity.WARNING
    title = "Crashes"
    fix = "None."

    def check(self, _ctx: ConfigContext) -> Iterable[Finding]:
        raise KeyError("boom")


class Reports(Rule[ConfigContext]):
    """Reports the partition count."""

    id = "HPCLZ-CMP-999"
    severity = Severity.INFO
    title = "Reports"
    fix = "None."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        yield self.finding(ctx, ("compute", "partitions", 0, "vm_size"), "first partition size")


def _ctx() -> ConfigContext:
    return ConfigContext(load_config(REPO / "configs" / "energy.yaml"))


def test_a_crashing_rule_becomes_an_error_finding_and_others_still_run() -> None:
    reported, _ = run_rules([Crashes, Reports], _ctx())
    crash = next(f for f in reported if f.rule_id == "HPCLZ-NET-999")
    assert crash.severity is Severity.ERROR and "KeyError" in crash.message
    assert any(f.rule_id == "HPCLZ-CMP-999" for f in reported)


def test_findings_point_at_the_yaml_line_and_name_list_items() -> None:
    reported, _ = run_rules([Reports], _ctx())
    text = (REPO / "configs" / "energy.yaml").read_text().splitlines()
    (finding,) = reported
    assert finding.path == "compute.partitions[hbv4].vm_size"
    assert finding.line is not None and "vm_size: Standard_HB176rs_v4" in text[finding.line - 1]


def test_suppression_is_case_insensitive_and_kept_aside() -> None:
    reported, suppressed = run_rules([Crashes, Reports], _ctx(), suppress=["hpclz-cmp-999"])
    assert [f.rule_id for f in suppressed] == ["HPCLZ-CMP-999"]
    assert [f.rule_id for f in reported] == ["HPCLZ-NET-999"]
