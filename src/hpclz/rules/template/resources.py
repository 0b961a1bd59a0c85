"""Resource-level lint: dependsOn targets, locations, pinned apiVersions and tags."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hpclz.arm.api_versions import pinned_version
from hpclz.arm.expressions import Call, ExpressionError, Property, expression_body, parse, walk
from hpclz.arm.walk import JsonPath, ResourceAt
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext
from hpclz.rules.template.evaluate import fold, fold_value

UNTAGGED_TYPES = frozenset(
    {
        # These types take no tags at all (their schemas have no `tags` property) ...
        "microsoft.authorization/roleassignments",
        "microsoft.authorization/policyassignments",
        "microsoft.maintenance/configurationassignments",
        "microsoft.security/pricings",  # schemas/2024-01-01/Microsoft.Security.json: no tags
        "microsoft.insights/diagnosticsettings",  # schemas/2021-05-01-preview/Microsoft.Insights.json: no tags
        "microsoft.insights/datacollectionruleassociations",  # schemas/2024-03-11/Microsoft.Insights.json: no tags
        # ... and a nested deployment is a record of an operation, not a billed resource.
        "microsoft.resources/deployments",
    }
)
GLOBAL_LOCATION = "global"
RESOURCE_ID_FUNCTIONS = frozenset({"resourceid", "subscriptionresourceid", "tenantresourceid"})


def _full_names(ctx: TemplateContext) -> dict[JsonPath, str | None]:
    """Folded full name per resource path; a nested child's name is prefixed with its parent's."""
    names: dict[JsonPath, str | None] = {}
    for found in ctx.resources:
        own = fold_value(found.resource.get("name"), ctx)
        parent = found.path[:-2] if len(found.path) >= 4 and found.path[-2] == "resources" else None
        if parent is not None and parent in names:
            parent_name = names[parent]
            own = None if parent_name is None or own is None else f"{parent_name}/{own}"
        names[found.path] = own
    return names


class DependsOnExists(Rule[TemplateContext]):
    """Each dependsOn entry must name a resource deployed by the same template; ARM rejects the template
    otherwise ("The resource 'x' is not defined in the template"). In the spirit of arm-ttk "DependsOn Best
    Practices" (which also asks for resourceId() targets). Targets that fold to no constant are not judged."""

    id = "HPCLZ-TPL-014"
    severity = Severity.ERROR
    title = "dependsOn names a resource that is not in the template"
    fix = "Point dependsOn at a resource of this template (resourceId(type, name)), or remove the entry."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        names = _full_names(ctx)
        symbolic = isinstance(ctx.template.get("resources"), dict)
        for found in ctx.resources:
            depends = found.resource.get("dependsOn")
            if not isinstance(depends, list):
                continue
            siblings = [r for r in ctx.resources if r.nested_in == found.nested_in]
            for index, entry in enumerate(depends):
                if not isinstance(entry, str) or (symbolic and entry in ctx.template["resources"]):
                    continue
                if self._missing(entry, siblings, names, ctx):
                    yield self.finding(
                        ctx,
                        (*found.path, "dependsOn", index),
                        f"{found.label} depends on {entry!r}, which this template does not deploy",
                    )

    def _missing(
        self, entry: str, siblings: list[ResourceAt], names: dict[JsonPath, str | None], ctx: TemplateContext
    ) -> bool:
        target = _target(entry, ctx)
        if target is None:
            return False
        type_, name = target
        for sibling in siblings:
            own = names.get(sibling.path)
            if own is None and (type_ is None or sibling.type.lower() == type_):
                return False  # an unresolvable name might be the target
            if own is not None and own.lower() == name and (type_ is None or sibling.type.lower() == type_):
                return False
            if own is not None and type_ is None and f"{sibling.type}/{own}".lower() == name:
                return False
        return True


def _target(entry: str, ctx: TemplateContext) -> tuple[str | None, str] | None:
    """(lower-case type or None, lower-case name) of a dependsOn entry; None when it cannot be known."""
    body = expression_body(entry)
    if body is None:
        return None, entry.lower()
    try:
        expr = parse(body)
    except ExpressionError:
        return None
    if not (isinstance(expr, Call) and expr.name.lower() in RESOURCE_ID_FUNCTIONS):
        return None
    values = [fold(arg, ctx) for arg in expr.args]
    typed = [i for i, v in enumerate(values) if v is not None and "/" in v and "." in v.split("/", 1)[0]]
    if not typed:
        return None
    names = values[typed[0] + 1 :]
    if not names or None in names:
        return None
    type_value = values[typed[0]] or ""
    return type_value.lower(), "/".join(n for n in names if n is not None).lower()


class LocationFromDeployment(Rule[TemplateContext]):
    """Adapted from arm-ttk "Location Should Not Be Hardcoded". hpclz renders concrete values on purpose, so a
    resource's location may be the `location` parameter, resourceGroup()/deployment().location, the deployment's
    own declared location or 'global'; any other region is a hard-coded value that silently splits the landing
    zone across regions (data residency, cross-region latency and egress for HPC traffic). A location
    parameter's defaultValue is held to the same standard."""

    id = "HPCLZ-TPL-015"
    severity = Severity.ERROR
    title = "Hard-coded location differs from the deployment's location"
    fix = "Use [parameters('location')] or the deployment's location; regions come from the config's metadata.location."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if "location" in found.resource:
                problem = _location_problem(found.resource["location"], ctx)
                if problem:
                    yield self.finding(ctx, (*found.path, "location"), f"{found.label}: {problem}")
        for name, spec in ctx.parameters.items():
            if "location" in name.lower() and isinstance(spec, dict) and "defaultValue" in spec:
                problem = _location_problem(spec["defaultValue"], ctx)
                if problem:
                    yield self.finding(ctx, ("parameters", name, "defaultValue"), f"parameter {name}: {problem}")


def _location_problem(value: object, ctx: TemplateContext) -> str | None:
    if not isinstance(value, str):
        return f"location {value!r} is not a region name"
    if _derived_location(value):
        return None
    region = fold_value(value, ctx)
    if region is None:
        return None
    normalized = region.replace(" ", "").lower()
    if normalized == GLOBAL_LOCATION:
        return None
    if ctx.location is not None and normalized == ctx.location.replace(" ", "").lower():
        return None
    declared = f"the deployment's location {ctx.location!r}" if ctx.location else "no declared location"
    return f"hard-coded location {region!r} (expected {declared})"


def _derived_location(value: str) -> bool:
    """[parameters('...location...')], [resourceGroup().location] and [deployment().location] follow the deployment."""
    body = expression_body(value)
    if body is None:
        return False
    try:
        expr = parse(body)
    except ExpressionError:
        return True  # TPL-010 reports it; guessing here would only add noise
    if isinstance(expr, Property) and expr.name.lower() == "location" and isinstance(expr.target, Call):
        return expr.target.name.lower() in ("resourcegroup", "deployment")
    return any(
        isinstance(node, Call)
        and node.name.lower() == "parameters"
        and node.args
        and "location" in str(getattr(node.args[0], "value", "")).lower()
        for node in walk(expr)
    )


class ApiVersionPinned(Rule[TemplateContext]):
    """Every resource uses the apiVersion hpclz pins for its type (hpclz.arm.api_versions, the versions of the
    schema subset in hpclz/armschemas). In the spirit of arm-ttk "apiVersions Should Be Recent": one reviewed
    version per type, literal, so schema checks, the ARM stand-in and production agree."""

    id = "HPCLZ-TPL-016"
    severity = Severity.ERROR
    title = "apiVersion is not the pinned version for its type"
    fix = "Use the pinned apiVersion for the type, or pin a new one in hpclz.arm.api_versions with its schema."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            problem = _api_version_problem(found)
            if problem:
                yield self.finding(ctx, (*found.path, "apiVersion"), f"{found.label}: {problem}")


def _api_version_problem(found: ResourceAt) -> str | None:
    pinned = pinned_version(found.type)
    actual = found.resource.get("apiVersion")
    if pinned is None:
        return f"type {found.type} has no pinned apiVersion"
    if actual != pinned:
        return f"apiVersion {actual!r} is not the pinned {pinned!r}"
    return None


class ResourcesTagged(Rule[TemplateContext]):
    """Top-level resources must carry tags: cost allocation, ownership and the landing-zone/environment
    markers hpclz plan and destroy rely on (CAF resource-organization guidance; Azure Policy "Require a tag on
    resources"). arm-ttk has no tag test; this one follows the CAF seed documents instead."""

    id = "HPCLZ-TPL-017"
    severity = Severity.WARNING
    title = "Resource has no tags"
    fix = "Add the landing zone's tags (config organization tags) to the resource's `tags`."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in _taggable(ctx):
            tags = found.resource.get("tags")
            if not tags or not isinstance(tags, dict | str):
                yield self.finding(ctx, found.path, f"{found.label} has no tags")


def _taggable(ctx: TemplateContext) -> Iterator[ResourceAt]:
    for found in ctx.resources:
        if found.type.count("/") == 1 and found.type.lower() not in UNTAGGED_TYPES:
            yield found


class ParametersSupplied(Rule[TemplateContext]):
    """The values a deployment passes must match the template's parameters: ARM rejects a value for an
    undeclared parameter ("not present in the original template") and a deployment that leaves a parameter
    without a defaultValue unset ("The value for the template parameter is not provided"). Mirrors ARM's own
    validation; arm-ttk checks only the template, so it cannot see this."""

    id = "HPCLZ-TPL-018"
    severity = Severity.ERROR
    title = "Deployment parameters do not match the template"
    fix = "Pass exactly the template's parameters (secure ones through secure_parameters), or give a defaultValue."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        if ctx.supplied is None:
            return
        declared = {name.lower(): name for name in ctx.parameters}
        for name in sorted(ctx.supplied - set(declared)):
            yield self.finding(
                ctx, ("parameters",), f"deployment {ctx.deployment} passes '{name}', which is not declared"
            )
        for lowered, name in declared.items():
            spec = ctx.parameters[name]
            if lowered not in ctx.supplied and not (isinstance(spec, dict) and "defaultValue" in spec):
                yield self.finding(
                    ctx,
                    ("parameters", name),
                    f"'{name}' has no defaultValue and deployment {ctx.deployment} passes none",
                )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "securestring": (str,),
    "int": (int,),
    "bool": (bool,),
    "object": (dict,),
    "secureobject": (dict,),
    "array": (list,),
}


class ParameterValuesValid(Rule[TemplateContext]):
    """Each value a deployment passes must satisfy its parameter's declaration (type, allowedValues,
    minValue/maxValue, minLength/maxLength), which ARM checks before deploying anything ("The provided value
    for the template parameter is not valid"). Mirrors ARM's own parameter validation; arm-ttk "Min And Max
    Value Are Numbers" checks only that the bounds themselves are numbers."""

    id = "HPCLZ-TPL-019"
    severity = Severity.ERROR
    title = "Deployment parameter value does not satisfy its declaration"
    fix = "Pass a value of the declared type within the declared bounds, or correct the declaration."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        declared = {name.lower(): (name, spec) for name, spec in ctx.parameters.items() if isinstance(spec, dict)}
        for key, value in ctx.parameter_values.items():
            if key.lower() not in declared:
                continue  # HPCLZ-TPL-018 reports undeclared values
            name, spec = declared[key.lower()]
            for problem in _value_problems(value, spec):
                yield self.finding(
                    ctx, ("parameters", name), f"deployment {ctx.deployment} passes {name}={value!r}: {problem}"
                )


def _value_problems(value: object, spec: dict[str, object]) -> Iterator[str]:
    kind = str(spec.get("type", "")).lower()
    expected = _JSON_TYPES.get(kind)
    # bool is an int in Python, never in ARM.
    if expected is not None and (not isinstance(value, expected) or (kind == "int" and isinstance(value, bool))):
        yield f"expected {spec.get('type')}, got {type(value).__name__}"
        return
    allowed = spec.get("allowedValues")
    if isinstance(allowed, list) and value not in allowed:
        yield f"not one of the allowedValues {allowed}"
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = spec.get("minValue"), spec.get("maxValue")
        if (isinstance(low, int) and value < low) or (isinstance(high, int) and value > high):
            yield f"outside minValue {low} / maxValue {high}"
    if isinstance(value, str | list):
        shortest, longest = spec.get("minLength"), spec.get("maxLength")
        if (isinstance(shortest, int) and len(value) < shortest) or (isinstance(longest, int) and len(value) > longest):
            yield f"length {len(value)} outside minLength {shortest} / maxLength {longest}"
