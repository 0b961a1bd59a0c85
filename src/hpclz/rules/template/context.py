"""What a template rule sees: one ARM template, its deployment, and a locator into its pretty-printed JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hpclz.arm.expressions import Expr, ExpressionError, expression_body, parse
from hpclz.arm.locator import locate_template
from hpclz.arm.walk import JsonPath, ResourceAt, as_dict, as_list, iter_resources, iter_strings
from hpclz.config.source_map import SourceMap

if TYPE_CHECKING:
    from hpclz.arm.checkov_gate import CheckovFailure
    from hpclz.arm.schema_gate import SchemaProblem
    from hpclz.render.model import Deployment

SECURE_TYPES = frozenset({"securestring", "secureobject"})


@dataclass(frozen=True)
class ParsedString:
    """A template string that is an expression: its tree, or why it does not parse."""

    path: JsonPath
    text: str
    expr: Expr | None
    error: ExpressionError | None


@dataclass
class TemplateContext:
    template: dict[str, Any]
    deployment: str
    scope: str = "resourceGroup"
    location: str | None = None  # the deployment's declared location, when known
    parameter_values: dict[str, Any] = field(default_factory=dict)
    supplied: frozenset[str] | None = None  # lower-case parameter names the deployment passes; None: unknown
    file: str | None = None
    checkov_failures: list[CheckovFailure] = field(default_factory=list)  # this template's, when checkov ran
    checkov_unparsed: bool = False  # checkov could not parse the file, so none of its checks ran on it
    # The other templates of the same plan, by deployment name, for rules that need what another deployment grants
    # (HPCLZ-TPL-051); empty when a template is checked alone.
    plan_templates: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_deployment(cls, deployment: Deployment, file: str | None = None) -> TemplateContext:
        return cls(
            template=deployment.template,
            deployment=deployment.name,
            scope=str(deployment.scope.value),
            location=deployment.location,
            parameter_values=dict(deployment.parameters),
            supplied=frozenset(n.lower() for n in (*deployment.parameters, *deployment.secure_parameters)),
            file=file,
        )

    @cached_property
    def source(self) -> SourceMap:
        return locate_template(self.file or f"{self.deployment}.json", self.template)

    @cached_property
    def expressions(self) -> list[ParsedString]:
        found = []
        for path, text in iter_strings(self.template):
            body = expression_body(text)
            if body is None:
                continue
            try:
                found.append(ParsedString(path, text, parse(body), None))
            except ExpressionError as error:
                found.append(ParsedString(path, text, None, error))
        return found

    @cached_property
    def resources(self) -> list[ResourceAt]:
        return list(iter_resources(self.template.get("resources")))

    @property
    def parameters(self) -> dict[str, Any]:
        return as_dict(self.template.get("parameters"))

    @property
    def variables(self) -> dict[str, Any]:
        return as_dict(self.template.get("variables"))

    @cached_property
    def secure_parameters(self) -> frozenset[str]:
        return frozenset(
            name.lower()
            for name, spec in self.parameters.items()
            if isinstance(spec, dict) and str(spec.get("type", "")).lower() in SECURE_TYPES
        )

    @cached_property
    def user_functions(self) -> frozenset[str]:
        names: set[str] = set()
        for namespace in as_list(self.template.get("functions")):
            if isinstance(namespace, dict):
                prefix = str(namespace.get("namespace", "")).lower()
                names.update(f"{prefix}.{str(member).lower()}" for member in as_dict(namespace.get("members")))
        return frozenset(names)

    @cached_property
    def schema_problems(self) -> list[SchemaProblem]:
        from hpclz.arm.schema_gate import validate_template

        return validate_template(self.template, self.scope)
