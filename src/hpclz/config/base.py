"""Shared building blocks of the config model."""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.config import JsonDict

UPDATE_POLICY = "update_policy"


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored.

    A field's description is its Field(description=...). Attribute docstrings are not read: pydantic's
    use_attribute_docstrings parses every model's source at import (inspect and ast), about 0.1 s of CPU on
    every command, and tests/config/test_descriptions.py keeps a docstring from being written where it would
    be lost.
    """

    # defer_build: a model's validator is built when it is first used, not when its class is defined. Loading a
    # config validates the root model, whose one validator holds every nested model's schema; built eagerly, each
    # of the ~80 config models also got a validator of its own (pydantic-core SchemaValidator per class,
    # pydantic/_internal/_model_construction.py complete_model_class) that nothing but the root's ever ran.
    model_config = ConfigDict(extra="forbid", validate_default=True, defer_build=True)


def policy(kind: str) -> JsonDict:
    """Schema metadata naming what changing this field costs (used by `hpclz plan`).

    in_place | drain_partition | restart_nodes | replace | replace_data | not_allowed
    """
    return {UPDATE_POLICY: kind}


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The model classes a field annotation can hold: through Annotated, unions, lists and dict values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return models_in(args[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        return [model for arg in args for model in models_in(arg)]
    if origin is dict and len(args) == 2:
        return models_in(args[1])
    return []


_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_RESOURCE_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/[^/]+/[^/]+/[^/]+", re.I)


def _guid(value: str) -> str:
    if not _GUID.match(value):
        raise ValueError("expected a GUID like 00000000-0000-0000-0000-000000000000")
    return value.lower()


def _resource_id(value: str) -> str:
    if not _RESOURCE_ID.match(value):
        raise ValueError(
            "expected an Azure resource ID like /subscriptions/<id>/resourceGroups/<rg>/providers/<namespace>/<type>/<name>"
        )
    return value


Guid = Annotated[str, AfterValidator(_guid)]
ResourceId = Annotated[str, AfterValidator(_resource_id)]
_REGION = re.compile(r"^[a-z][a-z0-9]*$")


def _region_spelling(value: object) -> object:
    """`WestEurope`, `West Europe` and `west_europe` name `westeurope`: the ARM name is the display name squeezed."""
    return re.sub(r"[\s_-]+", "", value).lower() if isinstance(value, str) else value


def _region(value: str) -> str:
    if not _REGION.match(value):
        raise ValueError("expected an Azure region name: letters and digits, like westeurope or eastus2")
    return value


# Whether the region exists is rule HPCLZ-ORG-004 (against the shipped catalog), not a parse error: a region
# newer than the catalog must stay usable by suppressing that rule.
AzureRegion = Annotated[
    str,
    BeforeValidator(_region_spelling),
    AfterValidator(_region),
    Field(examples=["eastus", "westeurope"]),
]
ContainerName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9](-?[a-z0-9])+$",
        min_length=3,
        max_length=63,
        description="Blob container: 3-63 lowercase letters, digits and single hyphens.",
    ),
]
# Azure: "Each resource, resource group, and subscription can have a maximum of 50 tag name-value pairs"
# (learn.microsoft.com/azure/azure-resource-manager/management/tag-resources#limitations). hpclz adds its own
# (hpclz-managed, hpclz-zone, hpclz-environment, hpclz-data: hpclz.render.zone.Zone.tags), so the config has the rest.
AZURE_TAG_LIMIT = 50
HPCLZ_TAGS = 4
# Characters that make text read differently from what it is: the bidirectional overrides and isolates
# ("Trojan Source", CVE-2021-42574, Unicode TR #36 section 2.2) and the byte order mark U+FEFF, invisible mid-text.
DECEPTIVE = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\ufeff]")


def _plain_text(value: str) -> str:
    # A validator wrapped around str makes pydantic skip its own check for unpaired surrogates (invalid Unicode,
    # which Azure cannot store), so this one makes it.
    lone = next((i for i, ch in enumerate(value) if "\ud800" <= ch <= "\udfff"), None)
    if lone is not None:
        raise ValueError(f"is not valid Unicode: an unpaired surrogate U+{ord(value[lone]):04X} at position {lone}")
    found = DECEPTIVE.search(value)
    if found:
        raise ValueError(f"holds the invisible character U+{ord(found.group()):04X} at position {found.start()}")
    return value


def _tag_count(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > AZURE_TAG_LIMIT - HPCLZ_TAGS:
        raise ValueError(
            f"{len(tags)} tags; Azure allows {AZURE_TAG_LIMIT} per resource and hpclz adds {HPCLZ_TAGS} of its own, "
            f"so at most {AZURE_TAG_LIMIT - HPCLZ_TAGS}"
        )
    return tags


PlainText = Annotated[str, AfterValidator(_plain_text)]
Tags = Annotated[
    dict[
        Annotated[PlainText, Field(min_length=1, max_length=512)],
        Annotated[PlainText, Field(max_length=256)],
    ],
    AfterValidator(_tag_count),
]


class Disabled(StrictModel):
    """The block is switched off: nothing is created or referenced."""

    mode: Literal["disabled"] = "disabled"
