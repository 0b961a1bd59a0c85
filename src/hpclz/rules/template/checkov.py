"""Security gate rules: checkov's ARM checks (hpclz.arm.checkov_gate) and the reviewed allowlist of skips."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hpclz.arm.checkov_gate import Allowlist
from hpclz.config.source_map import SourceMap
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext


class CheckovChecksPass(Rule[TemplateContext]):
    """Every checkov ARM check (CKV_AZURE_*) must pass on every rendered template, except checks listed with a
    reason in checkov-allowlist.yaml. checkov is the community baseline for Azure misconfigurations; hpclz's
    own TPL rules cover what it misses (see HPCLZ-TPL-024 and HPCLZ-TPL-025)."""

    id = "HPCLZ-TPL-030"
    severity = Severity.ERROR
    title = "checkov check failed"
    fix = "Fix the resource as the check's guideline says, or allowlist the check with a reason."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        if ctx.checkov_unparsed:
            yield self.finding(ctx, (), f"deployment {ctx.deployment}: checkov could not parse the template")
        paths = {f"{r.type}.{r.name}": r.path for r in ctx.resources}
        for failure in ctx.checkov_failures:
            path = paths.get(failure.resource, ())
            yield self.finding(
                ctx,
                path,
                f"deployment {ctx.deployment}, {failure.resource}: {failure.check_id} {failure.check_name}",
                fix=f"{self.fix} ({failure.guideline})" if failure.guideline else None,
            )


@dataclass
class AllowlistContext:
    """The allowlist file and which of its checks still fail on the plan's templates."""

    allowlist: Allowlist
    still_failing: set[str]

    @property
    def source(self) -> SourceMap:
        return self.allowlist.source


class AllowlistNotStale(Rule[AllowlistContext]):
    """An allowlisted checkov check that no longer fails on any template must leave the allowlist: a stale skip
    would silently hide the check if the problem came back. Entries marked `recheck: false` (checks that
    cannot run to completion on hpclz templates) are not re-run, so they are never judged stale."""

    id = "HPCLZ-TPL-031"
    severity = Severity.WARNING
    title = "checkov allowlist entry is stale"
    fix = "Remove the entry from checkov-allowlist.yaml."

    def check(self, ctx: AllowlistContext) -> Iterable[Finding]:
        for entry in ctx.allowlist.entries:
            if entry.recheck and entry.id not in ctx.still_failing:
                yield self.finding(ctx, ("skips", entry.index, "id"), f"{entry.id} is skipped but no template fails it")
