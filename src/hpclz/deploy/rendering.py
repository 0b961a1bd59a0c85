"""The engine behind `hpclz render`: a validated config -> DeploymentPlan -> gates -> files (templates, parameters,
manifest, diagram), with what the templates leave out and the payloads measured against Azure's limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hpclz.config.base import Disabled
from hpclz.config.loader import LoadedConfig
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.findings import Finding, Severity
from hpclz.output import ResultBody
from hpclz.render.build import build_plan
from hpclz.render.limits import LimitUse
from hpclz.render.model import DeploymentPlan

# "bicep": main.bicep and one module per deployment, exported from the same ARM JSON (hpclz.render.bicep).
TEMPLATE_FORMATS = ("arm", "bicep")


class RenderResult(ResultBody):
    file: str
    out_dir: str
    plan: DeploymentPlan | None = Field(description="None when config rules found errors and nothing was rendered.")
    written: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    gates_run: list[str] = Field(default_factory=list)
    gates_not_run: dict[str, str] = Field(default_factory=dict, description="gate -> why it did not run")
    gates_cached: list[str] = Field(
        default_factory=list, description="gates whose results all came from the gate cache (nothing re-scanned)"
    )
    notes: list[str] = Field(
        default_factory=list,
        description="Config the templates deliberately leave out, and why; with --diagram, why no image was drawn.",
    )
    template_format: str = Field(default="arm", description="arm (ARM JSON) or bicep (main.bicep and modules).")
    limits: list[LimitUse] = Field(
        default_factory=list, description="Each VM payload and template measured against its Azure limit."
    )

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def json_body(self) -> dict[str, Any]:
        from hpclz.render.writer import summary

        return {
            "file": self.file,
            "out_dir": self.out_dir,
            "format": self.template_format,
            "config_hash": self.plan.config_hash if self.plan else None,
            "deployments": [summary(d) for d in (self.plan.deployments if self.plan else [])],
            "written": self.written,
            "gates": self.gates_run,
            "gates_not_run": self.gates_not_run,
            "gates_cached": self.gates_cached,
            "notes": self.notes,
            "limits": [{**u.model_dump(), "headroom_pct": u.headroom_pct} for u in self.limits],
        }


@dataclass(frozen=True)
class RenderOptions:
    config: Path
    out_dir: Path
    diagram: bool = False  # also the network diagram (Mermaid, and images where a renderer is installed)
    gates: bool = True  # schema, lint and checkov gates over what was rendered
    template_format: str = "arm"  # one of TEMPLATE_FORMATS


def render_files(loaded: LoadedConfig, findings: list[Finding], opts: RenderOptions) -> RenderResult:
    """Render a config whose validation gave `findings` (warnings and errors): with any error, nothing is written."""
    from hpclz.render.diagram import diagram_files, images_note, render_images
    from hpclz.render.limits import measure
    from hpclz.render.writer import write_plan

    path, out_dir, template_format = opts.config, opts.out_dir, opts.template_format
    if any(f.severity is Severity.ERROR for f in findings):
        # An invalid landing zone must not leave templates behind that someone could deploy.
        return RenderResult(file=str(path), out_dir=str(out_dir), plan=None, findings=findings)
    plan = build_plan(loaded.config)
    gated = _run_gates(plan) if opts.gates else GatesRun(not_run={"all": "--no-gates"})
    extra = diagram_files(plan, loaded.config) if opts.diagram else {}
    written = write_plan(plan, out_dir, extra, template_format, inputs=(Path(loaded.file),))
    notes = not_rendered(loaded.config)
    if opts.diagram:
        written += render_images(out_dir)
        notes += [note] if (note := images_note()) else []
    return RenderResult(
        file=str(path),
        out_dir=str(out_dir),
        plan=plan,
        written=[str(p) for p in written],
        findings=[*findings, *gated.findings],
        gates_run=gated.ran,
        gates_not_run=gated.not_run,
        gates_cached=gated.cached,
        notes=notes,
        template_format=template_format,
        limits=measure(plan),
    )


def checked_format(template_format: str) -> str:
    if template_format not in TEMPLATE_FORMATS:
        raise HpclzError(
            f"--format {template_format}: expected one of {', '.join(TEMPLATE_FORMATS)}", exit_code=ExitCode.USAGE
        )
    return template_format


class GatesRun(BaseModel):
    findings: list[Finding] = Field(default_factory=list)
    ran: list[str] = Field(default_factory=list)
    not_run: dict[str, str] = Field(default_factory=dict)
    cached: list[str] = Field(default_factory=list)


def _run_gates(plan: DeploymentPlan) -> GatesRun:
    from hpclz.gates import check_plan

    report = check_plan(plan)
    return GatesRun(
        findings=report.findings,
        ran=[gate.value for gate in report.ran],
        not_run={gate.value: reason for gate, reason in report.not_run.items()},
        cached=[gate.value for gate, r in report.results.items() if r.ran and r.from_cache and not r.scanned],
    )


def not_rendered(config: LandingZoneConfig) -> list[str]:
    """What the config asks for that the rendered templates do not deliver: said out loud instead of dropped
    silently (docs/monitoring.md, "Not done")."""
    notes: list[str] = []
    monitoring = config.monitoring
    if isinstance(monitoring, Disabled) or not monitoring.diagnostic_settings:
        return notes
    if not monitoring.agent:
        notes.append(
            "monitoring.agent is off: the VMs' data collection rule gets no agent and no association, so it "
            "collects nothing (the audit deployment still sends activity, Key Vault and blob logs)"
        )
    else:
        # CycleCloud, not hpclz's ARM, creates the scheduler, login and partition scale sets, and the built-in
        # agent policies do not cover the HPC images they run (docs/monitoring.md), so their Syslog stays local.
        notes.append(
            "monitoring.agent covers the VMs hpclz creates: Syslog (sign-ins included) from CycleCloud's "
            "scheduler, login and partition nodes does not reach Log Analytics; their metrics reach Prometheus "
            "when monitoring.prometheus is on"
        )
    return notes
