"""checkNameAvailability for providers with global names (Storage, Key Vault), answered as ARM does.

POST /subscriptions/{sub}/providers/{namespace}/checkNameAvailability {"name", "type"} returns
{"nameAvailable": bool, "reason": "AlreadyExists" | "AccountNameInvalid", "message": str}
(azure-rest-api-specs: Microsoft.Storage StorageAccountCheckNameAvailability.json, Microsoft.KeyVault
checkVaultNameAvailability.json). A name is taken when the stand-in's Azure holds a resource of that type and
name anywhere, or a test lists it in World.taken_names (held by someone else's subscription).
"""

from __future__ import annotations

from typing import Any

CHECK_NAME = r"/providers/(?P<ns>microsoft\.storage|microsoft\.keyvault)/checknameavailability"


def name_answer(resources: dict[str, dict[str, Any]], taken: set[str], body: dict[str, Any]) -> dict[str, Any]:
    name, kind = str(body.get("name", "")), str(body.get("type", ""))
    held = name.lower() in taken or any(
        str(r.get("type", "")).lower() == kind.lower() and str(r.get("name", "")).lower() == name.lower()
        for r in resources.values()
    )
    if not held:
        return {"nameAvailable": True}
    noun = "storage account" if kind.lower() == "microsoft.storage/storageaccounts" else "vault"
    return {"nameAvailable": False, "reason": "AlreadyExists", "message": f"The {noun} named {name} is already taken."}
