"""Saved plans: `hpclz plan --out plan.json`, applied exactly by `hpclz deploy --plan plan.json`.

The file holds the rendered DeploymentPlan that was shown, with hashes of the config, of hpclz's
template sources and of each deployment, and the state (lineage, serial) it was computed against.
`load_saved_plan` refuses the file when any of them moved on, as a stale terraform plan file is
refused: applying it would do something nobody reviewed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from hpclz import __version__
from hpclz.config.loader import LoadedConfig
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import HpclzError
from hpclz.outfile import write_out_file
from hpclz.package_data import templates_dir
from hpclz.plan.changeset import ChangeSet, StateRef
from hpclz.plan.config_diff import config_snapshot
from hpclz.render.model import DeploymentPlan, canonical_json
from hpclz.state.model import StateDocument

FORMAT: Literal["hpclz-plan"] = "hpclz-plan"
FORMAT_VERSION = 1


class SavedPlan(BaseModel):
    format: Literal["hpclz-plan"] = FORMAT
    format_version: int = FORMAT_VERSION
    hpclz_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    config_hash: str
    templates_hash: str
    deployment_hashes: dict[str, str]
    state: StateRef | None
    plan: DeploymentPlan
    changes: dict[str, Any] = Field(default_factory=dict, description="The change set as shown (JSON result).")


def config_fingerprint(config: LandingZoneConfig) -> str:
    """Over the secret-redacted config: secrets are resolved at deploy time and never enter a plan."""
    return hashlib.sha256(canonical_json(config_snapshot(config)).encode()).hexdigest()


def templates_fingerprint(root: Path | None = None) -> str:
    """Over every template source file, so an hpclz upgrade that renders differently makes old plans stale."""
    base = root or templates_dir()
    digest = hashlib.sha256()
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        digest.update(path.relative_to(base).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def save_plan(
    path: str | Path, plan: DeploymentPlan, changes: ChangeSet, config: LandingZoneConfig, state: StateDocument | None
) -> SavedPlan:
    if changes.blocked:
        raise HpclzError(
            f"{path}: a plan with changes that are not allowed cannot be saved: {', '.join(changes.blocked)}"
        )
    saved = SavedPlan(
        config_hash=config_fingerprint(config),
        templates_hash=templates_fingerprint(),
        deployment_hashes={d.name: d.template_hash() for d in plan.deployments},
        state=StateRef.of(state),
        plan=plan,
        changes=changes.payload(),
    )
    # 0600: the plan names every resource, address range and identity of the zone.
    write_out_file(Path(path), saved.model_dump_json(indent=1) + "\n", "plan", mode=0o600)
    return saved


def read_saved_plan(path: str | Path) -> SavedPlan:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HpclzError(f"{path}: saved plan not found (make one with `hpclz plan CONFIG --out {path}`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HpclzError(f"{path}: not a readable saved plan: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise HpclzError(f'{path}: not an hpclz saved plan (no "format": "{FORMAT}")')
    if raw.get("format_version") != FORMAT_VERSION:
        raise HpclzError(
            f"{path}: saved plan format {raw.get('format_version')} is not {FORMAT_VERSION}; make the plan again"
        )
    try:
        return SavedPlan.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise HpclzError(f"{path}: saved plan is damaged at {where}: {first['msg']}") from None


def stale_reasons(saved: SavedPlan, config: LandingZoneConfig, state: StateDocument | None) -> list[str]:
    reasons = []
    if saved.config_hash != config_fingerprint(config):
        reasons.append("the config changed since the plan was made")
    if saved.templates_hash != templates_fingerprint():
        reasons.append("hpclz's templates changed since the plan was made (another hpclz version?)")
    edited = edited_deployments(saved, config)
    if edited:
        reasons.append(f"the plan file was edited after it was saved ({', '.join(edited)})")
    now = StateRef.of(state)
    if saved.state != now:
        reasons.append(f"the state changed since the plan was made ({_describe(saved.state)} -> {_describe(now)})")
    return reasons


def edited_deployments(saved: SavedPlan, config: LandingZoneConfig) -> list[str]:
    """The deployments of the file that are not what this config renders, field for field (resource group, scope,
    parameters, templates, everything deploy uses). The hashes in the file are no proof: whoever edits the file can
    recompute them, so the plan is rendered again and compared, and no key is needed."""
    from hpclz.render.build import build_plan

    try:
        fresh = build_plan(config)
    except HpclzError:
        return ["the config no longer renders"]
    ours = {d.name: canonical_json(d.model_dump(mode="json")) for d in fresh.deployments}
    theirs = {d.name: canonical_json(d.model_dump(mode="json")) for d in saved.plan.deployments}
    edited = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))
    plan_fields = {k: v for k, v in saved.plan.model_dump(mode="json").items() if k != "deployments"}
    if plan_fields != {k: v for k, v in fresh.model_dump(mode="json").items() if k != "deployments"}:
        edited.append("the plan's own fields")
    if not edited and [d.name for d in fresh.deployments] != [d.name for d in saved.plan.deployments]:
        edited.append("the order of its deployments")
    return edited


def _describe(ref: StateRef | None) -> str:
    return "no state" if ref is None else f"lineage {ref.lineage[:8]} serial {ref.serial}"


def load_saved_plan(
    path: str | Path, config: LandingZoneConfig | LoadedConfig, state: StateDocument | None
) -> DeploymentPlan:
    """The DeploymentPlan saved at `path`, if it is still the plan for `config` and `state`; else HpclzError."""
    return check_saved_plan(read_saved_plan(path), path, config, state)


def check_saved_plan(
    saved: SavedPlan, path: str | Path, config: LandingZoneConfig | LoadedConfig, state: StateDocument | None
) -> DeploymentPlan:
    """The plan of an already read `saved`, if it is still current; deploy checks the very copy it preflighted."""
    model = config.config if isinstance(config, LoadedConfig) else config
    reasons = stale_reasons(saved, model, state)
    if reasons:
        raise HpclzError(
            f"{path}: stale plan, refusing to apply it: {'; '.join(reasons)}",
            hint=f"run `hpclz plan CONFIG --out {path}` again and review it",
        )
    return saved.plan
