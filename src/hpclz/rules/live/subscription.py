"""Live rules on the subscription itself: provider and feature registration, ARM's validate call, unread APIs."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import FactsReported, LiveContext


class ProviderNotRegistered(FactsReported):
    """ARM refuses every resource of a provider namespace the subscription has not registered, and only
    says so mid-deployment. Source: learn.microsoft.com/azure/azure-resource-manager/management/resource-providers-and-types."""

    id = "HPCLZ-ORG-101"
    severity = Severity.ERROR
    title = "A resource provider the templates use is not registered in the subscription"
    fix = "Register it: az provider register --namespace <namespace>, then wait for 'Registered'."
    path = ("metadata", "subscription_id")

    def facts(self, ctx: LiveContext) -> dict[str, str]:
        return ctx.unregistered

    def message(self, key: str, value: str) -> str:
        return f"provider {key} is {value}"

    def fix_for(self, key: str) -> str | None:
        return f"az provider register --namespace {key}"


class ArmValidationFailed(FactsReported):
    """ARM's own validate call (template, parameters, policy, permissions) failed for a deployment."""

    id = "HPCLZ-TPL-101"
    severity = Severity.ERROR
    title = "Azure Resource Manager rejected a deployment in its validate call"
    fix = "Read ARM's message: it names the template problem, the denying policy or the missing permission."
    path = ("metadata",)

    def facts(self, ctx: LiveContext) -> dict[str, str]:
        return ctx.validation_errors

    def message(self, key: str, value: str) -> str:
        return f"deployment {key}: {value}"


class FeatureNotRegistered(Rule[LiveContext]):
    """`encryptionAtHost: true` on a VM or scale set fails until the subscription has registered the
    Microsoft.Compute/EncryptionAtHost feature: `az feature register --namespace Microsoft.Compute --name
    EncryptionAtHost`, wait for Registered, then re-register the provider (MicrosoftDocs/azure-compute-docs@055347c:
    articles/virtual-machines/linux/disks-enable-host-based-encryption-cli.md)."""

    id = "HPCLZ-CMP-107"
    severity = Severity.ERROR
    title = "A subscription feature the templates need is not registered"
    fix = "az feature register --namespace <namespace> --name <feature>; wait for Registered; az provider register."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for name, state in sorted(ctx.features.items()):
            if state == "Registered":
                continue
            namespace, feature = name.split("/", 1)
            yield self.finding(
                ctx,
                ("compute", "cyclecloud", "vm_size"),
                f"feature {name} is {state}; encryptionAtHost needs it Registered",
                fix=f"az feature register --namespace {namespace} --name {feature}, wait for 'Registered', then "
                f"az provider register --namespace {namespace}",
            )


class LiveFactsUnavailable(FactsReported):
    """When a live API is unreachable or forbidden the check is skipped, and said so, rather than crash."""

    id = "HPCLZ-CMP-104"
    severity = Severity.WARNING
    title = "A live preflight check could not read Azure and was skipped"
    fix = "Grant the identity Reader on the subscription (Microsoft.Compute/skus/read, usages/read), or ignore."
    path = ("metadata", "location")

    def facts(self, ctx: LiveContext) -> dict[str, str]:
        return ctx.unavailable

    def message(self, key: str, value: str) -> str:
        return f"{key} unavailable: {value}"
