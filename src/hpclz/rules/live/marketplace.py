"""Live rule on pinned marketplace node images: the version must exist in the region, and not be on its way out."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.config.images import pinned_marketplace_images
from hpclz.rules.live.context import LiveContext

# imageDeprecationStatus.imageState of Virtual Machine Images - Get: "Active", "ScheduledForDeprecation" or
# "Deprecated" (azure-rest-api-specs ComputeRP/stable/2024-07-01 VirtualMachineImage_Get_MaximumSet_Gen.json shows
# "ScheduledForDeprecation" with scheduledDeprecationTime and an alternativeOption).
_LEAVING = {"scheduledfordeprecation", "deprecated"}


class MarketplaceImageUnavailable(Rule[LiveContext]):
    """A pinned marketplace version (HPCLZ-CMP-050) is looked up where the nodes will run: Virtual Machine Images -
    Get answers 404 "Artifact: VMImage was not found." (code NotFound) for a version the region does not have, and
    CycleCloud would find out only when it creates the first node, long after deploy. A version the publisher has
    scheduled for deprecation still deploys, until it is deleted (Azure/azure-powershell#28779): a warning naming
    the date, so the pin is bumped in a reviewed change rather than by a failing scale-out."""

    id = "HPCLZ-CMP-109"
    severity = Severity.ERROR
    title = "Pinned marketplace image version not in the region, or being deprecated"
    fix = (
        "Pin a version the region has: az vm image list --location <region> --publisher <publisher> --offer <offer> "
        "--sku <sku> --all -o table; the plan then shows the node roll (docs/patching.md)."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, who, urn in pinned_marketplace_images(ctx.loaded.config.compute):
            if urn not in ctx.marketplace_images:
                continue  # never asked, or the read failed (HPCLZ-CMP-104 says which)
            body = ctx.marketplace_images[urn]
            if body is None:
                yield self.finding(ctx, path, f"{who}: {urn} is not offered in {ctx.location} (Azure: NotFound)")
                continue
            status = (body.get("properties") or {}).get("imageDeprecationStatus") or {}
            if str(status.get("imageState", "")).lower() in _LEAVING:
                when = status.get("scheduledDeprecationTime") or "a date Azure does not give"
                yield self.finding(
                    ctx,
                    path,
                    f"{who}: {urn} is {status['imageState']} ({when})",
                    severity=Severity.WARNING,
                )


class MarketplaceTermsNotAccepted(Rule[LiveContext]):
    """The CycleCloud server boots Microsoft's CycleCloud Marketplace image, which carries a purchase plan (CCWS's
    bicep/vm.bicep:46-50 at Azure/cyclecloud-slurm-workspace@bc0fc1b). Its terms must be accepted in the subscription
    "so that the image can be used to create VMs" (`az vm image terms accept`, learn.microsoft.com/cli/azure/vm/image/
    terms); otherwise the compute deployment fails after the network, storage and identity deployments have run.
    The terms are read with MarketplaceAgreements_Get (Microsoft.MarketplaceOrdering 2021-01-01, properties.accepted:
    "If any version of the terms have been accepted, otherwise false")."""

    id = "HPCLZ-CMP-110"
    severity = Severity.ERROR
    title = "Marketplace terms of the CycleCloud image not accepted in this subscription"
    fix = "Accept them once per subscription: az vm image terms accept --publisher P --offer O --plan N"

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        cyclecloud = ctx.loaded.config.compute.cyclecloud
        path = ("compute", "cyclecloud", "image" if cyclecloud.image else "version")
        for key, accepted in sorted(ctx.marketplace_terms.items()):
            if accepted:
                continue
            publisher, offer, plan = key.split(":")
            accept = f"az vm image terms accept --publisher {publisher} --offer {offer} --plan {plan}"
            yield self.finding(
                ctx,
                path,
                f"the Marketplace terms of {key} are not accepted in this subscription; accept them with: {accept}",
                fix=f"Run `{accept}` once with an account that may accept them for the subscription.",
            )
