"""Pinned API versions and the few ARM expressions templates need, built as text.

API versions come from hpclz.arm.api_versions, the pinned schema subset (hpclz/armschemas/README.md):
the schema gate knows no other. Expressions stay within what ARM must resolve at deploy time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hpclz.arm.api_versions import PINNED_API_VERSIONS, pinned_version


class _Pinned(Mapping[str, str]):
    """`api["<type>"]` in templates: the pinned version, and an error for a type outside the pinned subset."""

    def __getitem__(self, resource_type: str) -> str:
        version = pinned_version(resource_type)
        if version is None:
            raise KeyError(f"{resource_type} has no pinned API version (hpclz.arm.api_versions)")
        return version

    def __iter__(self) -> Iterator[str]:
        return iter(PINNED_API_VERSIONS)

    def __len__(self) -> int:
        return len(PINNED_API_VERSIONS)


API_VERSIONS: Mapping[str, str] = _Pinned()

RG_TEMPLATE_SCHEMA = "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#"
SUBSCRIPTION_TEMPLATE_SCHEMA = (
    "https://schema.management.azure.com/schemas/2018-05-01/subscriptionDeploymentTemplate.json#"
)
PARAMETERS_SCHEMA = "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#"


def literal(text: str) -> str:
    """A string literal inside an ARM expression: single quotes, doubled to escape."""
    return "'" + text.replace("'", "''") + "'"


def resource_id(type_: str, *names: str, group: str | None = None) -> str:
    """`resourceId(...)` body (no brackets); `group` names another resource group of the zone."""
    args = [literal(group)] if group else []
    args += [literal(type_), *(literal(n) for n in names)]
    return f"resourceId({', '.join(args)})"


def expr(body: str) -> str:
    return f"[{body}]"


def resource_id_expr(type_: str, *names: str, group: str | None = None) -> str:
    """The whole `[resourceId(...)]` expression; templates call it as `resource_id`."""
    return expr(resource_id(type_, *names, group=group))


def resource_path(type_: str, *names: str) -> str:
    """`<namespace>/<type>/<name>[/<child type>/<name>...]`: a resource's ID below `providers/`, and the
    relative `scope` of an extension resource such as a role assignment."""
    namespace, *types = type_.split("/")
    return "/".join([namespace, *(f"{t}/{n}" for t, n in zip(types, names, strict=True))])


def role_definition(guid: str) -> str:
    return f"subscriptionResourceId('Microsoft.Authorization/roleDefinitions', {literal(guid)})"
