"""Azure Managed Lustre's blob integration (HSM), as creation of the file system depends on it.

What Azure documents (MicrosoftDocs/azure-stack-docs@f1e86c5c94e6ff51da9c97c87bc5084b963f3a8d:
azure-managed-lustre/amlfs-prerequisites.md, "Access roles for blob integration"): "A storage account owner must
add these roles before creating the file system: Storage Account Contributor, Storage Blob Data Contributor", for the
service principal "HPC Cache Resource Provider"; "If the file system can't access your blob container, file system
creation fails. Validation performed before the file system is created can't detect container access permission
problems." The same page requires the account's "storage account key access setting set to Enabled" and a logs
container apart from the data container, to which import and export write their logs.

How the stand-in judges it: when a deployment creates (not updates) a file system whose `hsm.settings` name a data
and a logging container, the tenant's HPC Cache Resource Provider (its object ID: `ProvingGround.storage_cache_rp`,
unset = not judged) must hold, through the world's role assignments and the real built-in role JSONs (authz.py):
- the account's keys, `Microsoft.Storage/storageAccounts/listkeys/action` at the account (the page's key-access
  requirement; Storage Account Contributor's `Microsoft.Storage/storageAccounts/*` holds it), and
- the containers' blobs, `.../blobServices/containers/blobs/read` and `/write` on the data container (the page: its
  files are imported into the file system, and the roles must "permit the Azure Managed Lustre system to modify
  data") and `/write` on the logging container (import and export write their logs there); Storage Blob Data
  Contributor's data actions hold them.
Which operations the service performs with the two roles is Microsoft's to know: these are the ones the page's
requirements imply, one per role, so removing either role fails creation.

The answer: the file system's create ends in the terminal provisioning state Failed, which ARM reports for the
resource as ResourceDeploymentFailure, "The resource operation completed with terminal provisioning state
'Failed'." (world.py). Azure documents no error code or message of the service's own for this failure (the
prerequisites page, the troubleshooting page azure-managed-lustre/amlfs-troubleshoot.md and the public issue
trackers were searched), so the inner code below is the stand-in's label, never asserted as Azure's.
"""

from __future__ import annotations

from typing import Any

from tests.support.arm_standin.authz import Authorization, Principal
from tests.support.arm_standin.behaviours import AMLFS, Refusal

RP_NAME = "HPC Cache Resource Provider"
LIST_KEYS = "Microsoft.Storage/storageAccounts/listkeys/action"
BLOB_READ = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
BLOB_WRITE = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
CODE = "StandInAmlfsHsmAccessFailed"  # the stand-in's label: Azure documents no code for this failure


def hsm_access_refusal(
    authorization: Authorization, resources: dict[str, dict[str, Any]], rp_object_id: str | None, amlfs: dict[str, Any]
) -> Refusal | None:
    """The refusal of a file system's creation when the resource provider cannot reach its HSM containers."""
    if rp_object_id is None or str(amlfs.get("type", "")).lower() != AMLFS:
        return None
    if str(amlfs.get("id", "")).lower() in resources:
        return None  # an update: the page's failure is creation's
    settings = ((amlfs.get("properties") or {}).get("hsm") or {}).get("settings") or {}
    container, logs = settings.get("container"), settings.get("loggingContainer")
    if not container:
        return None
    rp = Principal(rp_object_id, kind="ServicePrincipal", name=RP_NAME)
    account = str(container).split("/blobServices/", 1)[0]
    needs = [(LIST_KEYS, account, False), (BLOB_READ, f"{container}/blobs/*", True)]
    needs += [(BLOB_WRITE, f"{c}/blobs/*", True) for c in (container, logs) if c]
    missing = [
        f"{action} on {scope}"
        for action, scope, data in needs
        if not authorization.allowed(rp, action, scope, resources, data=data)
    ]
    if not missing:
        return None
    return Refusal(
        CODE,
        f"{RP_NAME} ({rp_object_id}) lacks {'; '.join(missing)}: the file system cannot access its blob container "
        "(the stand-in's account of the failure amlfs-prerequisites.md documents, not Azure's words).",
    )
