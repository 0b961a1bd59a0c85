"""Walking a template: its resources (children and inline nested deployments included) and its strings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hpclz.config.source_map import PathPart

JsonPath = tuple[PathPart, ...]
NESTED_DEPLOYMENT = "microsoft.resources/deployments"


@dataclass(frozen=True)
class ResourceAt:
    path: JsonPath
    resource: dict[str, Any]
    type: str  # full type, also for a child written relative to its parent
    nested_in: JsonPath | None = None  # path of the inline deployment template holding it, if any

    @property
    def name(self) -> str:
        return str(self.resource.get("name", "?"))

    @property
    def label(self) -> str:
        return f"{self.type}/{self.name}"


def as_list(value: Any) -> list[Any]:
    """A template value used as a list; anything else (a typo'd shape) is treated as empty."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def iter_resources(
    resources: Any, base: JsonPath = ("resources",), parent_type: str = "", *, into_deployments: bool = True
) -> Iterator[ResourceAt]:
    """Every resource, children after their parent; inline nested deployment templates too when asked."""
    yield from _iter(resources, base, parent_type, None, into_deployments)


def _iter(
    resources: Any, base: JsonPath, parent_type: str, nested_in: JsonPath | None, into_deployments: bool
) -> Iterator[ResourceAt]:
    items = resources.items() if isinstance(resources, dict) else enumerate(as_list(resources))
    for key, resource in items:
        if not isinstance(resource, dict):
            continue
        path = (*base, key)
        own = str(resource.get("type", ""))
        # A nested child may name its type relative to its parent ("subnets") or in full.
        type_ = f"{parent_type}/{own}" if parent_type and "/" not in own else own
        yield ResourceAt(path, resource, type_, nested_in)
        if "resources" in resource:
            yield from _iter(resource["resources"], (*path, "resources"), type_, nested_in, into_deployments)
        inner = inline_template(resource, type_)
        if into_deployments and inner is not None:
            template_path = (*path, "properties", "template")
            yield from _iter(inner.get("resources"), (*template_path, "resources"), "", template_path, True)


def inline_template(resource: dict[str, Any], type_: str) -> dict[str, Any] | None:
    if type_.lower() != NESTED_DEPLOYMENT:
        return None
    properties = resource.get("properties")
    template = properties.get("template") if isinstance(properties, dict) else None
    return template if isinstance(template, dict) else None


def iter_strings(node: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, str]]:
    """Every string with its path: values, and object keys too, which ARM also evaluates as expressions
    (userAssignedIdentities is keyed by "[resourceId(...)]")."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith("["):
                yield (*path, key), key
            yield from iter_strings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from iter_strings(value, (*path, index))


def iter_entries(node: Any, wanted: Callable[[str, Any], bool], path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every object entry for which `wanted(key, value)` holds, with its path; not searched below a match."""
    if isinstance(node, dict):
        for key, value in node.items():
            if wanted(str(key), value):
                yield (*path, key), value
            else:
                yield from iter_entries(value, wanted, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from iter_entries(value, wanted, (*path, index))
