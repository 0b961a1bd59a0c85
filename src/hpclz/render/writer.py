"""Write a DeploymentPlan to a folder: templates, parameters (never secrets), a manifest.

The output is byte-identical across runs: sorted keys, stable order, no timestamps. Files listed in an
earlier manifest are removed first, so a component that disappeared leaves no stale template behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hpclz.arm.locator import pretty_json
from hpclz.errors import ExitCode, HpclzError
from hpclz.outfile import write_out_file
from hpclz.render.arm import PARAMETERS_SCHEMA
from hpclz.render.diagram import DIAGRAM_FILES
from hpclz.render.model import Deployment, DeploymentPlan

MANIFEST = "manifest.json"
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


def manifest(plan: DeploymentPlan, template_format: str = "arm", diagram: bool = False) -> dict[str, Any]:
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
    shape: dict[str, Any] = {"format": template_format} if template_format != "arm" else {}
    if diagram:  # so that the next render removes them, and only them
        shape["diagram_files"] = list(DIAGRAM_FILES)
    # Named, so that a later render of a zone no longer routed to a hub firewall leaves no stale hub template behind.
    shape["egress_files"] = egress_names(plan)
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


def output_files(plan: DeploymentPlan, template_format: str = "arm", diagram: bool = False) -> dict[str, str]:
    """Relative path -> content of every file `write_plan` writes: ARM JSON, or Bicep (main.bicep + modules)."""
    files = {MANIFEST: dumps(manifest(plan, template_format, diagram)), **egress_files(plan)}
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


def egress_names(plan: DeploymentPlan) -> list[str]:
    from hpclz.render.egress import EGRESS_JSON, EGRESS_MD
    from hpclz.render.hub_egress import HUB_TEMPLATE, routes_to_appliance

    return [EGRESS_JSON, EGRESS_MD, *([HUB_TEMPLATE] if routes_to_appliance(plan) else [])]


def egress_files(plan: DeploymentPlan) -> dict[str, str]:
    """What the zone's VMs fetch from outside it, for the hub team's firewall (docs/egress.md)."""
    from hpclz.render.egress import EGRESS_JSON, EGRESS_MD, allow_list, egress_json, egress_markdown
    from hpclz.render.hub_egress import HUB_TEMPLATE, hub_template

    rows = allow_list(plan)
    files = {EGRESS_JSON: dumps(egress_json(plan, rows)), EGRESS_MD: egress_markdown(plan, rows)}
    if (hub := hub_template(plan, rows)) is not None:
        files[HUB_TEMPLATE] = dumps(hub)
    return files


WRITERS = 8  # threads writing a render's files (write_plan)


def write_plan(
    plan: DeploymentPlan,
    out_dir: Path,
    extra: dict[str, str] | None = None,
    template_format: str = "arm",
    inputs: tuple[Path, ...] = (),
) -> list[Path]:
    """`extra`: diagram files (named in the manifest). `inputs`: files this render read, never removed."""
    files = {**output_files(plan, template_format, diagram=bool(extra)), **(extra or {})}
    _clear_previous(out_dir, inputs)
    todo: list[tuple[Path, str]] = []
    for relative, text in sorted(files.items()):
        path = out_dir / relative
        try:
            _refuse_links(out_dir, path.parent)
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HpclzError(f"{path}: cannot write: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None
        todo.append((path, text))
    # Each file is a new file renamed in (a planted link is replaced, not followed) after an fsync, which waits for
    # the disk. On the development machine's ext4 disk, busy with other work, the 33 files of the energy preset
    # waited 0.38-0.47 s one after another and 0.04-0.30 s from a few threads, whose fsyncs share journal commits;
    # on the same disk when quiet, both took 0.02-0.04 s (hpclz.outfile.write_out_file, 20 KB each). Every file is
    # still written and synced the same way; the first failure is raised once all have finished.
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        done = [pool.submit(write_out_file, path, text, "rendered file") for path, text in todo]
    for future in done:
        future.result()
    written = [path for path, _ in todo]
    return written


def _refuse_links(out_dir: Path, folder: Path) -> None:
    """A link inside the output folder (`artifacts` -> elsewhere) would send writes or deletes wherever it points."""
    for part in [folder, *folder.parents]:
        if part == out_dir or not part.is_relative_to(out_dir):
            return
        if part.is_symlink():
            raise OSError(errno.ELOOP, f"{part} is a symbolic link; hpclz does not write through links")


def _listed(old: dict[str, Any]) -> list[str]:
    """Every file an earlier manifest says its render wrote."""
    names: list[str] = []
    for entry in old.get("deployments", []):
        names += [entry["template"], entry["parameters"], *entry.get("artifacts", [])]
    names += list(old.get("diagram_files", []))
    names += list(old.get("egress_files", []))
    return names


def _removable(out_dir: Path, name: str, inputs: tuple[Path, ...]) -> Path:
    """The file `name` names, if removing it cannot touch anything but what hpclz wrote in `out_dir`."""
    path = out_dir / name
    try:
        _refuse_links(out_dir, path.parent)
        # The folder holding it, resolved; a link at the name itself is removed, never followed.
        inside = (path.parent.resolve() / path.name).is_relative_to(out_dir.resolve()) and not Path(name).is_absolute()
        real = path.exists() and not path.is_symlink()
        hit = next((i for i in inputs if real and i.exists() and path.samefile(i)), None)
    except OSError as exc:
        raise HpclzError(f"{out_dir / MANIFEST}: {name}: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None
    if not inside or hit is not None:
        why = "is an input of this render" if hit is not None else "lies outside the output folder"
        raise HpclzError(
            f"{out_dir / MANIFEST}: lists {name}, which {why}; refusing to delete it (nothing was written)",
            exit_code=ExitCode.USAGE,
        )
    return path


def _clear_previous(out_dir: Path, inputs: tuple[Path, ...] = ()) -> None:
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
        stale = [str(name) for name in _listed(old)]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise HpclzError(
            f"{previous}: not an hpclz manifest; refusing to write over it", exit_code=ExitCode.USAGE
        ) from None
    # Only what the manifest lists, each checked before any is removed: a file the user put in the folder stays.
    doomed = [_removable(out_dir, name, inputs) for name in stale]
    for path in doomed:
        path.unlink(missing_ok=True)
    for folder in (out_dir / ARTIFACTS, out_dir / BICEP_MODULES):
        _remove_empty(folder)
    previous.unlink()


def _remove_empty(folder: Path) -> None:
    """Folders the render made, once nothing is left in them (deepest first)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for child in sorted((p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()
