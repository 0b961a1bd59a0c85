"""Validate rendered ARM templates against the official ARM JSON schemas, offline.

The schemas (a subset of Azure/azure-resource-manager-schemas, see hpclz/armschemas/README.md) ship in the
package, so an installed wheel runs this gate; scripts/regen-armschemas rebuilds them. They are
registered under their public URLs in a referencing.Registry that refuses the network, so every $ref
resolves locally. Validating a whole template through the envelope's resources `oneOf` gives errors
that say nothing useful, so the envelope is checked with `resources` relaxed and each resource on its
own against `allOf [resourceBase, <its definition>]`, picked by scope:type@apiVersion.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT4

from hpclz.arm.walk import ResourceAt, inline_template, iter_resources
from hpclz.config.source_map import PathPart
from hpclz.errors import ExitCode, HpclzError

SCHEMAS_ENV = "HPCLZ_ARM_SCHEMAS"
BASE_URL = "https://schema.management.azure.com/schemas/"
ENVELOPE = BASE_URL + "2019-04-01/deploymentTemplate.json"
RESOURCE_BASE = BASE_URL + "common/definitions.json#/definitions/resourceBase"


def default_schemas_dir() -> Path:
    """The subset packaged with hpclz (src/hpclz/armschemas, package data in the wheel)."""
    return Path(__file__).resolve().parents[1] / "armschemas"


def schemas_dir() -> Path:
    return Path(os.environ.get(SCHEMAS_ENV) or default_schemas_dir())


def schemas_available() -> bool:
    return (schemas_dir() / "schemas" / "resourceIndex.json").is_file()


@dataclass(frozen=True)
class SchemaProblem:
    """One schema violation: where in the template, which resource, and the schema's own words."""

    path: tuple[PathPart, ...]
    message: str
    resource: str  # "type/name", or "" for the envelope
    unknown_type: bool = False


class SchemaSet:
    """The loaded schemas: a local-only registry and the scope:type@apiVersion index."""

    def __init__(self, root: Path):
        files = sorted((root / "schemas").rglob("*.json"))
        if not files:
            raise HpclzError(
                f"no ARM schemas under {root / 'schemas'}",
                exit_code=ExitCode.FAILED,
                hint=f"set {SCHEMAS_ENV} to a folder built by scripts/regen-armschemas",
            )
        resources = []
        for file in files:
            uri = BASE_URL + file.relative_to(root / "schemas").as_posix()
            contents = json.loads(file.read_text(encoding="utf-8-sig"))
            resources.append((uri, Resource.from_contents(contents, default_specification=DRAFT4)))
        # referencing's _attrs.pyi marks its attrs classes with a home-made __dataclass_transform__ that mypy does not
        # read, so mypy sees neither Registry's nor NoSuchResource's attrs __init__ (referencing 0.37.0).
        self.registry: Registry[Any] = Registry(retrieve=_refuse_network).with_resources(resources)  # type: ignore[call-arg]
        self.index: dict[str, str] = json.loads((root / "schemas" / "resourceIndex.json").read_text(encoding="utf-8"))
        envelope = dict(self.registry.contents(ENVELOPE))
        envelope["properties"] = {**envelope["properties"], "resources": {"type": ["array", "object"]}}
        self.envelope = Draft4Validator(envelope, registry=self.registry)
        self._validators: dict[str, Draft4Validator] = {}

    def resource_validator(self, ref: str) -> Draft4Validator:
        if ref not in self._validators:
            schema = {"allOf": [{"$ref": RESOURCE_BASE}, {"$ref": ref}]}
            self._validators[ref] = Draft4Validator(schema, registry=self.registry)
        return self._validators[ref]

    def ref_for(self, scope: str, type_: str, api_version: str) -> str | None:
        return self.index.get(f"{scope}:{type_}@{api_version}")


def _refuse_network(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs __init__ unseen by mypy: see SchemaSet


@cache
def _load(root: str) -> SchemaSet:
    return SchemaSet(Path(root))


def load_schemas() -> SchemaSet:
    """The schema set, loaded once per folder; a clear HpclzError when the folder is missing."""
    root = schemas_dir()
    if not schemas_available():
        raise HpclzError(
            f"ARM schemas not found at {root}",
            exit_code=ExitCode.FAILED,
            hint=f"reinstall hpclz (the schemas ship in the package) or set {SCHEMAS_ENV}",
        )
    return _load(str(root.resolve()))


def validate_template(template: dict[str, Any], scope: str, schemas: SchemaSet | None = None) -> list[SchemaProblem]:
    """Every schema problem of a template (envelope, resources, nested children and inline deployments)."""
    schemas = schemas or load_schemas()
    return list(_template_problems(template, scope, (), schemas))


def _template_problems(
    template: dict[str, Any], scope: str, base: tuple[PathPart, ...], schemas: SchemaSet
) -> Iterator[SchemaProblem]:
    for error in schemas.envelope.iter_errors(_canonical_types(template)):
        yield _problem(error, base, "")
    for found in iter_resources(template.get("resources"), (*base, "resources"), into_deployments=False):
        yield from _resource_problems(found, scope, schemas)


# ARM reads parameter and output types without case, but the schema's enum spells them inconsistently
# ("securestring" beside "secureObject"), so the documented "secureString" would fail it.
_TYPE_SPELLING = {t.lower(): t for t in ("string", "securestring", "int", "bool", "object", "secureObject", "array")}


def _canonical_types(template: dict[str, Any]) -> dict[str, Any]:
    copy = dict(template)
    for section in ("parameters", "outputs"):
        entries = template.get(section)
        if not isinstance(entries, dict):
            continue
        copy[section] = {
            name: {**spec, "type": _TYPE_SPELLING.get(str(spec["type"]).lower(), spec["type"])}
            if isinstance(spec, dict) and isinstance(spec.get("type"), str)
            else spec
            for name, spec in entries.items()
        }
    return copy


def _resource_problems(found: ResourceAt, scope: str, schemas: SchemaSet) -> Iterator[SchemaProblem]:
    resource, type_, path = found.resource, found.type, found.path
    api_version = str(resource.get("apiVersion", ""))
    ref = schemas.ref_for(scope, type_, api_version)
    if ref is None:
        yield SchemaProblem(
            (*path, "apiVersion"),
            f"no ARM schema for {scope}:{type_}@{api_version}: unknown type or apiVersion",
            found.label,
            unknown_type=True,
        )
        return
    # A nested child is written relative to its parent; the schema wants the full type.
    body = {k: v for k, v in resource.items() if k != "resources"}
    body["type"] = type_
    for error in schemas.resource_validator(ref).iter_errors(body):
        yield _problem(error, path, found.label)
    inner = inline_template(resource, type_)
    if inner is not None:
        yield from _template_problems(inner, _nested_scope(resource, scope), (*path, "properties", "template"), schemas)


def _nested_scope(deployment: dict[str, Any], scope: str) -> str:
    """Where ARM runs an inline deployment: a resourceGroup names a group; a subscriptionId alone is the
    subscription ("Scope to subscription": learn.microsoft.com azure-resource-manager/templates/
    deploy-to-resource-group); neither keeps the parent's scope."""
    if "resourceGroup" in deployment:
        return "resourceGroup"
    return "subscription" if "subscriptionId" in deployment else scope


def _problem(error: ValidationError, base: tuple[PathPart, ...], label: str) -> SchemaProblem:
    chosen = _deepest(error)
    path = (*base, *chosen.absolute_path)
    where = "/".join(str(p) for p in chosen.absolute_path) or "(resource)"
    return SchemaProblem(path, f"{where}: {_short(chosen.message)}", label)


def _deepest(error: ValidationError) -> ValidationError:
    """The most specific cause. ARM schemas wrap most values in oneOf [real type, expression string] and list
    resource variants in anyOf, so descend into the closest branch: drop branches that reject the value's
    shape outright (wrong type, not an expression), then take the one with the fewest errors."""
    if not error.context:
        return error
    branches: dict[Any, list[ValidationError]] = {}
    for child in error.context:
        branches.setdefault(child.schema_path[0] if child.schema_path else None, []).append(child)
    plausible = [b for b in branches.values() if not any(_rejects_shape(e) for e in b)] or list(branches.values())
    closest = min(plausible, key=lambda b: (len(b), -max(len(e.absolute_path) for e in b)))
    return _deepest(max(closest, key=lambda e: len(e.absolute_path)))


def _rejects_shape(error: ValidationError) -> bool:
    """A branch for another kind of value: a type mismatch at the value itself, or the expression pattern."""
    at_value = not error.relative_path
    expression = error.validator == "pattern" and str(error.validator_value).startswith("^\\[")
    return at_value and (error.validator == "type" or expression)


def _short(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."
