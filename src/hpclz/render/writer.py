"""Write a DeploymentPlan to a folder: templates, parameters (never secrets), a manifest.

The output is byte-identical across runs: sorted keys, stable order, no timestamps. Files listed in an
earlier manifest are removed first, so a component that disappeared leaves no stale template behind.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from hpclz.arm.locator import pretty_json
from hpclz.errors import ExitCode, HpclzError
from hpclz.render.arm import PARAMETERS_SCHEMA
from hpclz.render.diagram import DIAGRAM_FILES
from hpclz.render.model import Deployment, DeploymentPlan

MANIFEST = "manifest.json"
BICEP_MAIN = "main.bicep"  # hpclz.render.bicep.MAIN, named here so clearing a folder needs no exporter import
BICEP_MODULES = "modules"
ARTIFACTS = "artifacts"


def dumps(value: Any) -> str:
    """The layout finding line numbers point into (hpclz.arm.locator), so it is defined there once."""
    return pretty_json(value) + "\n"


def file_stem(index: int, deployment: Deployment) -> str:
    return f"{index:02d}-{deployment.component}"


def parameters_file(deployment: Deployment) -> dict[str, Any]:
    """An ARM parameters file; secureString parameters are left out and resolved at deploy time."""
    return {
        "$schema": PARAMETERS_SCHEMA,
        "contentVersion": "1.0.0.0",
        "parameters": {name: {"value": value} for name, value in sorted(deployment.parameters.items())},
    }


def summary(deployment: Deployment) -> dict[str, Any]:
    """What the manifest and `hpclz render --output json` both say of a deployment."""
    return {
        "name": deployment.name,
        "component": deployment.component,
        "scope": deployment.scope.value,
        "resource_group": deployment.resource_group,
        "depends_on": deployment.depends_on,
        "resources": len(deployment.resources()),
        "template_hash": deployment.template_hash(),
    }


def manifest(plan: DeploymentPlan, template_format: str = "arm") -> dict[str, Any]:
    from hpclz.render.bicep import MAIN, module_path

    entries = []
    for index, d in enumerate(plan.deployments, start=1):
        stem = file_stem(index, d)
        bicep = template_format == "bicep"
        entries.append(
            {
                **summary(d),
                "order": index,
                "location": d.location,
                "template": module_path(index, d) if bicep else f"{stem}.template.json",
                "parameters": MAIN if bicep else f"{stem}.parameters.json",
                "secure_parameters": d.secure_parameters,
                "artifacts": sorted(f"{ARTIFACTS}/{name}" for name in d.artifacts),
            }
        )
    # ARM manifests stay as they were; a Bicep folder says so, since its "template" entries are modules.
    shape = {"format": template_format} if template_format != "arm" else {}
    return {
        **shape,
        "landing_zone": plan.landing_zone,
        "environment": plan.environment,
        "location": plan.location,
        "subscription_id": plan.subscription_id,
        "config_hash": plan.config_hash,
        "deployments": entries,
        "waves": [[d.name for d in wave] for wave in plan.waves()],
    }


def output_files(plan: DeploymentPlan, template_format: str = "arm") -> dict[str, str]:
    """Relative path -> content of every file `write_plan` writes: ARM JSON, or Bicep (main.bicep + modules)."""
    files = {MANIFEST: dumps(manifest(plan, template_format))}
    if template_format == "bicep":
        from hpclz.render.bicep import bicep_files

        files.update(bicep_files(plan))
    for index, d in enumerate(plan.deployments, start=1):
        stem = file_stem(index, d)
        if template_format != "bicep":
            files[f"{stem}.template.json"] = dumps(d.template)
            files[f"{stem}.parameters.json"] = dumps(parameters_file(d))
        for name, text in d.artifacts.items():
            files[f"{ARTIFACTS}/{name}"] = text
    return files


def write_plan(
    plan: DeploymentPlan, out_dir: Path, extra: dict[str, str] | None = None, template_format: str = "arm"
) -> list[Path]:
    files = {**output_files(plan, template_format), **(extra or {})}
    _clear_previous(out_dir)
    written = []
    for relative, text in sorted(files.items()):
        path = out_dir / relative
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
        except OSError as exc:
            raise HpclzError(f"{path}: cannot write: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None
        written.append(path)
    return written


def _clear_previous(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise HpclzError(f"{out_dir}: exists and is not a folder", exit_code=ExitCode.USAGE)
    previous = out_dir / MANIFEST
    if not previous.is_file():
        if any(out_dir.iterdir()):
            raise HpclzError(
                f"{out_dir}: folder is not empty and holds no hpclz {MANIFEST}; refusing to write over it",
                exit_code=ExitCode.USAGE,
                hint="choose an empty or new folder",
            )
        return
    try:
        old = json.loads(previous.read_text(encoding="utf-8"))
        stale = [name for e in old.get("deployments", []) for name in (e["template"], e["parameters"])]
    except (ValueError, KeyError, TypeError):
        raise HpclzError(
            f"{previous}: not an hpclz manifest; refusing to write over it", exit_code=ExitCode.USAGE
        ) from None
    for name in stale:
        (out_dir / Path(name).name).unlink(missing_ok=True)
    for name in DIAGRAM_FILES:
        (out_dir / name).unlink(missing_ok=True)
    shutil.rmtree(out_dir / ARTIFACTS, ignore_errors=True)
    (out_dir / BICEP_MAIN).unlink(missing_ok=True)
    shutil.rmtree(out_dir / BICEP_MODULES, ignore_errors=True)
    previous.unlink()
